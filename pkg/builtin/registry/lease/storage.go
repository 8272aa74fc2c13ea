package lease

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// NewREST returns the leases storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	store, err := registry.NewStore(optsGetter, registry.Resource{
		Plural:   coordinationv1.Resource("leases"),
		Singular: coordinationv1.Resource("lease"),
		New:      func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:  func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy: Strategy,
		AttrFunc: GetAttrs,
	})
	if err != nil {
		return nil, err
	}
	return store, nil
}
