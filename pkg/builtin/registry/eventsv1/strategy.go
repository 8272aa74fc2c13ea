// Package eventsv1 stores events.k8s.io/v1 Events. They are kept apart from
// core events: without Kubernetes' internal Event type the two cannot share
// one storage.
package eventsv1

import (
	"context"
	"fmt"

	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for events.k8s.io events.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, func(e *core.Event) field.ErrorList {
		return corevalidation.ValidateEventCreate(e, eventsv1.SchemeGroupVersion)
	})
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, func(e, was *core.Event) field.ErrorList {
		return corevalidation.ValidateEventUpdate(e, was, eventsv1.SchemeGroupVersion)
	})
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
