package secret

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// NewREST returns the secrets storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	resource := corev1.Resource("secrets")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Secret{} },
		NewListFunc:               func() runtime.Object { return &corev1.SecretList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: corev1.Resource("secret"),
		CreateStrategy:            Strategy,
		UpdateStrategy:            Strategy,
		DeleteStrategy:            Strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(resource),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return store, nil
}
