// Package event stores core/v1 Events.
package event

import (
	"context"
	"fmt"

	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for core events.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, func(e *core.Event) field.ErrorList {
		return corevalidation.ValidateEventCreate(e, corev1.SchemeGroupVersion)
	})
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, func(e, was *core.Event) field.ErrorList {
		return corevalidation.ValidateEventUpdate(e, was, corev1.SchemeGroupVersion)
	})
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
