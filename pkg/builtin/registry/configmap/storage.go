package configmap

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST is the configmaps storage.
type REST struct{ *genericregistry.Store }

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets kubectl accept "cm".
func (*REST) ShortNames() []string { return []string{"cm"} }

// NewREST returns the configmaps storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, error) {
	resource := corev1.Resource("configmaps")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc:               func() runtime.Object { return &corev1.ConfigMapList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: corev1.Resource("configmap"),
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
