// Package configmap stores core/v1 ConfigMaps.
package configmap

import (
	"context"
	"fmt"

	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for configmaps.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, corevalidation.ValidateConfigMap)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, corevalidation.ValidateConfigMapUpdate)
}

// GetAttrs returns the labels and selectable fields of a configmap.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return nil, nil, fmt.Errorf("not a configmap: %T", obj)
	}
	l, f := registry.Attrs(&cm.ObjectMeta, true, nil)
	return l, f, nil
}
