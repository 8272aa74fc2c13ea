// Package deployment stores apps/v1 Deployments with their status and scale
// subresources.
package deployment

import (
	"context"
	"fmt"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

type strategy struct{ registry.Strategy }

// Strategy is the strategy of the deployments resource: it owns metadata and
// spec; status belongs to the status subresource.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{}
	d.Generation = 1
}

// PrepareForUpdate keeps the stored status and bumps the generation when the
// spec changes, which is what controllers compare observedGeneration against.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	d, oldD := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	d.Status = oldD.Status
	if !apiequality.Semantic.DeepEqual(d.Spec, oldD.Spec) {
		d.Generation = oldD.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, func(d *apps.Deployment) field.ErrorList {
		return appsvalidation.ValidateDeployment(d, pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, nil))
	})
}

// ValidateUpdate is kube-apiserver's for apps/v1, the only version served:
// the selector is immutable, or the pods would be orphaned.
func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, func(d, was *apps.Deployment) field.ErrorList {
		opts := pod.GetValidationOptionsFromPodTemplate(&d.Spec.Template, &was.Spec.Template)
		errs := appsvalidation.ValidateDeploymentUpdate(d, was, opts)
		return append(errs, apivalidation.ValidateImmutableField(d.Spec.Selector, was.Spec.Selector, field.NewPath("spec", "selector"))...)
	})
}

type statusStrategy struct{ strategy }

// StatusStrategy updates status only.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("spec")
}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*appsv1.Deployment).Spec = old.(*appsv1.Deployment).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, appsvalidation.ValidateDeploymentStatusUpdate)
}

func resetFields(path string) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{"apps/v1": fieldpath.NewSet(fieldpath.MakePathOrDie(path))}
}

// GetAttrs returns the labels and selectable fields of a deployment.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return nil, nil, fmt.Errorf("not a deployment: %T", obj)
	}
	l, f := registry.Attrs(&d.ObjectMeta, true, nil)
	return l, f, nil
}
