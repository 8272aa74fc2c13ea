package serviceaccount

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST is the service accounts storage.
type REST struct{ *genericregistry.Store }

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets kubectl accept "sa".
func (*REST) ShortNames() []string { return []string{"sa"} }

// NewREST returns the service accounts storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, error) {
	resource := corev1.Resource("serviceaccounts")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.ServiceAccount{} },
		NewListFunc:               func() runtime.Object { return &corev1.ServiceAccountList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: corev1.Resource("serviceaccount"),
		CreateStrategy:            Strategy,
		UpdateStrategy:            Strategy,
		DeleteStrategy:            Strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(resource),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
