// Package eventsv1 stores events.k8s.io/v1 Events. They are kept apart from
// core events: without Kubernetes' internal Event type the two cannot share
// one storage.
package eventsv1

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// Length limits of events.k8s.io events.
const (
	shortFieldLimit = 128
	noteLimit       = 1024
)

var eventTypes = sets.New(corev1.EventTypeNormal, corev1.EventTypeWarning)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for events.k8s.io events.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*eventsv1.Event))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	e, oldE := obj.(*eventsv1.Event), old.(*eventsv1.Event)
	errs := registry.ValidateMetaUpdate(&e.ObjectMeta, &oldE.ObjectMeta)
	// Only the series and metadata of an event may change.
	for _, f := range []struct {
		name     string
		new, old any
	}{
		{"action", e.Action, oldE.Action},
		{"reason", e.Reason, oldE.Reason},
		{"note", e.Note, oldE.Note},
		{"type", e.Type, oldE.Type},
		{"regarding", e.Regarding, oldE.Regarding},
		{"reportingController", e.ReportingController, oldE.ReportingController},
		{"reportingInstance", e.ReportingInstance, oldE.ReportingInstance},
	} {
		errs = append(errs, apivalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
	}
	return append(errs, validate(e)...)
}

func validate(e *eventsv1.Event) field.ErrorList {
	errs := registry.ValidateMeta(&e.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if ns := e.Regarding.Namespace; ns != "" && ns != e.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), ns, "does not match event.namespace"))
	} else if ns == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(field.NewPath("regarding", "namespace"), ns, "does not match event.namespace"))
	}
	for _, f := range []struct{ name, value string }{
		{"reportingController", e.ReportingController},
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
	if len(e.Note) > noteLimit {
		errs = append(errs, field.TooLong(field.NewPath("note"), "", noteLimit))
	}
	if !eventTypes.Has(e.Type) {
		errs = append(errs, field.NotSupported(field.NewPath("type"), e.Type, sets.List(eventTypes)))
	}
	if e.Series != nil && e.Series.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series", "count"), e.Series.Count, "should be at least 2"))
	}
	return errs
}

// GetAttrs returns the labels and selectable fields of an events.k8s.io event.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	e, ok := obj.(*eventsv1.Event)
	if !ok {
		return nil, nil, fmt.Errorf("not an event: %T", obj)
	}
	l, f := registry.Attrs(&e.ObjectMeta, true, fields.Set{
		"regarding.kind":            e.Regarding.Kind,
		"regarding.namespace":       e.Regarding.Namespace,
		"regarding.name":            e.Regarding.Name,
		"regarding.uid":             string(e.Regarding.UID),
		"regarding.apiVersion":      e.Regarding.APIVersion,
		"regarding.resourceVersion": e.Regarding.ResourceVersion,
		"regarding.fieldPath":       e.Regarding.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"type":                      e.Type,
	})
	return l, f, nil
}
