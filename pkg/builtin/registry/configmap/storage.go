package configmap

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// REST is the configmaps storage.
type REST struct{ *genericregistry.Store }

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets kubectl accept "cm".
func (*REST) ShortNames() []string { return []string{"cm"} }

// NewREST returns the configmaps storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, error) {
	store, err := registry.NewStore(optsGetter, registry.Resource{
		Plural:   corev1.Resource("configmaps"),
		Singular: corev1.Resource("configmap"),
		New:      func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:  func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy: Strategy,
		AttrFunc: GetAttrs,
	})
	if err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
