// Package namespace stores core/v1 Namespaces with Kubernetes' two-phase
// deletion: a delete marks the namespace Terminating, and it goes away once
// its spec and metadata finalizers are empty.
package namespace

import (
	"context"
	"fmt"
	"slices"

	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// NameLabel is the label every namespace carries with its own name.
const NameLabel = "kubernetes.io/metadata.name"

type strategy struct{ registry.Strategy }

// Strategy is the strategy of the namespaces resource: it owns metadata only;
// spec belongs to finalize and status to the status subresource.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

// PrepareForCreate starts the namespace Active with the "kubernetes"
// finalizer, so deleting it waits for its content to go first.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec = oldNS.Spec
	ns.Status = oldNS.Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, corevalidation.ValidateNamespace)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, corevalidation.ValidateNamespaceUpdate)
}

// Canonicalize sets the name label after name generation, so selectors on
// it see every namespace.
func (strategy) Canonicalize(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[NameLabel] = ns.Name
}

func resetFields(paths ...string) map[fieldpath.APIVersion]*fieldpath.Set {
	set := fieldpath.NewSet()
	for _, p := range paths {
		set.Insert(fieldpath.MakePathOrDie(p))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{"v1": set}
}

// GetAttrs returns the labels and selectable fields (including status.phase)
// of a namespace.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, nil, fmt.Errorf("not a namespace: %T", obj)
	}
	l, f := registry.Attrs(&ns.ObjectMeta, false, fields.Set{"status.phase": string(ns.Status.Phase)})
	return l, f, nil
}
