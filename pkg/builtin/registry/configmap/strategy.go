// Package configmap stores core/v1 ConfigMaps.
package configmap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// maxSize bounds a configmap's data like Kubernetes does (1 MiB).
const maxSize = 1 << 20

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for configmaps.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*corev1.ConfigMap))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	cm, oldCM := obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap)
	errs := registry.ValidateMetaUpdate(&cm.ObjectMeta, &oldCM.ObjectMeta)
	if oldCM.Immutable != nil && *oldCM.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !apiequality.Semantic.DeepEqual(cm.Data, oldCM.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !apiequality.Semantic.DeepEqual(cm.BinaryData, oldCM.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, validate(cm)...)
}

func validate(cm *corev1.ConfigMap) field.ErrorList {
	errs := registry.ValidateMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	size := 0
	keys := make([]string, 0, len(cm.Data))
	for k, v := range cm.Data {
		keys = append(keys, k)
		size += len(v)
	}
	errs = append(errs, registry.ValidateDataKeys(keys, field.NewPath("data"))...)
	keys = keys[:0]
	for k, v := range cm.BinaryData {
		keys = append(keys, k)
		size += len(v)
		if _, dup := cm.Data[k]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
	}
	errs = append(errs, registry.ValidateDataKeys(keys, field.NewPath("binaryData"))...)
	if size > maxSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxSize))
	}
	return errs
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
