package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	errs := registry.ValidateMeta(&d.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(errs, validateSpec(&d.Spec, field.NewPath("spec"))...)
}

func validateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	errs := registry.ValidateMetaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	// apps/v1 selectors are immutable: changing one would orphan the pods.
	errs = append(errs, apivalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
	return append(errs, validateDeployment(d)...)
}

func validateSpec(spec *appsv1.DeploymentSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Replicas == nil {
		errs = append(errs, field.Required(path.Child("replicas"), ""))
	} else {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.Replicas), path.Child("replicas"))...)
	}
	errs = append(errs, validateSelector(spec.Selector, spec.Template.Labels, path)...)
	errs = append(errs, validateTemplate(&spec.Template, path.Child("template"))...)
	errs = append(errs, validateStrategy(&spec.Strategy, path.Child("strategy"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), path.Child("minReadySeconds"))...)
	if l := spec.RevisionHistoryLimit; l != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*l), path.Child("revisionHistoryLimit"))...)
	}
	if p := spec.ProgressDeadlineSeconds; p != nil && *p <= spec.MinReadySeconds {
		errs = append(errs, field.Invalid(path.Child("progressDeadlineSeconds"), *p, "must be greater than minReadySeconds"))
	}
	return errs
}

// validateSelector requires a non-empty selector that picks the template's pods.
func validateSelector(s *metav1.LabelSelector, templateLabels map[string]string, path *field.Path) field.ErrorList {
	selPath := path.Child("selector")
	if s == nil {
		return field.ErrorList{field.Required(selPath, "")}
	}
	errs := metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, selPath)
	if len(s.MatchLabels)+len(s.MatchExpressions) == 0 {
		return append(errs, field.Invalid(selPath, s, "empty selector is invalid for deployment"))
	}
	selector, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return append(errs, field.Invalid(selPath, s, err.Error()))
	}
	if !selector.Matches(labels.Set(templateLabels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), templateLabels, "`selector` does not match template `labels`"))
	}
	return errs
}

// validateTemplate checks what a pod template needs to be runnable; full pod
// validation is kube-apiserver's and out of reach without its internal types.
func validateTemplate(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	metaPath := path.Child("metadata")
	errs := metav1validation.ValidateLabels(t.Labels, metaPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, metaPath.Child("annotations"))...)
	specPath := path.Child("spec")
	if p := t.Spec.RestartPolicy; p != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(specPath.Child("restartPolicy"), p, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if len(t.Spec.Containers) == 0 {
		errs = append(errs, field.Required(specPath.Child("containers"), ""))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(t.Spec.InitContainers, names, specPath.Child("initContainers"))...)
	return append(errs, validateContainers(t.Spec.Containers, names, specPath.Child("containers"))...)
}

func validateContainers(cs []corev1.Container, names sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := path.Index(i)
		for _, msg := range apivalidation.NameIsDNSLabel(c.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if c.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	}
	return errs
}

func validateStatus(s *appsv1.DeploymentStatus, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"observedGeneration", s.ObservedGeneration},
		{"replicas", int64(s.Replicas)},
		{"updatedReplicas", int64(s.UpdatedReplicas)},
		{"readyReplicas", int64(s.ReadyReplicas)},
		{"availableReplicas", int64(s.AvailableReplicas)},
		{"unavailableReplicas", int64(s.UnavailableReplicas)},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(f.value, path.Child(f.name))...)
	}
	if s.CollisionCount != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*s.CollisionCount), path.Child("collisionCount"))...)
	}
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(path.Child("readyReplicas"), s.ReadyReplicas, "cannot be greater than status.replicas"))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(path.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than readyReplicas"))
	}
	return errs
}
