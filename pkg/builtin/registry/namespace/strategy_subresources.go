package namespace

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
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
	ns := obj.(*corev1.Namespace)
	errs := registry.ValidateMetaUpdate(&ns.ObjectMeta, &old.(*corev1.Namespace).ObjectMeta)
	want := corev1.NamespaceActive
	if ns.DeletionTimestamp != nil {
		want = corev1.NamespaceTerminating
	}
	if ns.Status.Phase != want {
		errs = append(errs, field.Invalid(field.NewPath("status", "phase"), ns.Status.Phase, "must be "+string(want)))
	}
	return errs
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
	ns := obj.(*corev1.Namespace)
	errs := registry.ValidateMetaUpdate(&ns.ObjectMeta, &old.(*corev1.Namespace).ObjectMeta)
	return append(errs, validateFinalizers(ns.Spec.Finalizers)...)
}

func (finalizeStrategy) Canonicalize(runtime.Object) {}
