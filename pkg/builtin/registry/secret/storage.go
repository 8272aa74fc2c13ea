package secret

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// NewREST returns the secrets storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	store, err := registry.NewStore(optsGetter, registry.Resource{
		Plural:   corev1.Resource("secrets"),
		Singular: corev1.Resource("secret"),
		New:      func() runtime.Object { return &corev1.Secret{} },
		NewList:  func() runtime.Object { return &corev1.SecretList{} },
		Strategy: Strategy,
		AttrFunc: GetAttrs,
	})
	if err != nil {
		return nil, err
	}
	return store, nil
}
