// Package event stores core/v1 Events.
package event

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// Length limits Kubernetes puts on the newer (eventTime-carrying) events.
const (
	shortFieldLimit = 128
	noteLimit       = 1024
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for core events.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*corev1.Event))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	e := obj.(*corev1.Event)
	errs := registry.ValidateMetaUpdate(&e.ObjectMeta, &old.(*corev1.Event).ObjectMeta)
	return append(errs, validate(e)...)
}

// validate follows Kubernetes' rules for core events: old-style events (no
// eventTime) only need namespaces that agree; new-style ones need the
// reporting fields.
func validate(e *corev1.Event) field.ErrorList {
	errs := registry.ValidateMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	nsPath := field.NewPath("involvedObject", "namespace")
	involvedNS := e.InvolvedObject.Namespace
	switch {
	case involvedNS != "" && involvedNS != e.Namespace:
		errs = append(errs, field.Invalid(nsPath, involvedNS, "does not match event.namespace"))
	case involvedNS == "" && e.Namespace != metav1.NamespaceDefault && (e.EventTime.IsZero() || e.Namespace != metav1.NamespaceSystem):
		// Events about cluster-scoped objects live in default (or, new-style, kube-system).
		errs = append(errs, field.Invalid(nsPath, involvedNS, "does not match event.namespace"))
	}
	if e.EventTime.IsZero() {
		return errs
	}
	for _, f := range []struct{ name, value string }{
		{"reportingComponent", e.ReportingController},
		{"reportingInstance", e.ReportingInstance},
		{"action", e.Action},
		{"reason", e.Reason},
	} {
		if f.value == "" {
			errs = append(errs, field.Required(field.NewPath(f.name), ""))
		} else if len(f.value) > shortFieldLimit {
			errs = append(errs, field.TooLong(field.NewPath(f.name), "", shortFieldLimit))
		}
	}
	if len(e.Message) > noteLimit {
		errs = append(errs, field.TooLong(field.NewPath("message"), "", noteLimit))
	}
	return errs
}

// GetAttrs returns the labels and the selectable fields kubectl uses
// (involvedObject.*, reason, source, type) of a core event.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, nil, fmt.Errorf("not an event: %T", obj)
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	l, f := registry.Attrs(&e.ObjectMeta, true, fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	})
	return l, f, nil
}
