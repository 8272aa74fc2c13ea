package namespace

import (
	"context"

	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

type statusStrategy struct{ strategy }

// StatusStrategy updates status only.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("spec")
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Namespace).Spec = old.(*corev1.Namespace).Spec
}

// ValidateUpdate keeps the phase consistent with the deletion timestamp.
func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, corevalidation.ValidateNamespaceStatusUpdate)
}

func (statusStrategy) Canonicalize(runtime.Object) {}

type finalizeStrategy struct{ strategy }

// FinalizeStrategy updates spec.finalizers only.
var FinalizeStrategy = finalizeStrategy{Strategy}

func (finalizeStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

func (finalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Namespace).Status = old.(*corev1.Namespace).Status
}

func (finalizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, corevalidation.ValidateNamespaceFinalizeUpdate)
}

func (finalizeStrategy) Canonicalize(runtime.Object) {}
