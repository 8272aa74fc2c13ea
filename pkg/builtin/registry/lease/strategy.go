// Package lease stores coordination.k8s.io/v1 Leases.
package lease

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

var strategies = sets.New(coordinationv1.OldestEmulationVersion)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for leases.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*coordinationv1.Lease))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	l := obj.(*coordinationv1.Lease)
	errs := registry.ValidateMetaUpdate(&l.ObjectMeta, &old.(*coordinationv1.Lease).ObjectMeta)
	return append(errs, validate(l)...)
}

func validate(l *coordinationv1.Lease) field.ErrorList {
	errs := registry.ValidateMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), *d, "must be greater than 0"))
	}
	if t := l.Spec.LeaseTransitions; t != nil && *t < 0 {
		errs = append(errs, field.Invalid(spec.Child("leaseTransitions"), *t, "must be greater than or equal to 0"))
	}
	if s := l.Spec.Strategy; s != nil && !strategies.Has(*s) {
		errs = append(errs, field.NotSupported(spec.Child("strategy"), *s, sets.List(strategies)))
	}
	if l.Spec.PreferredHolder != nil && l.Spec.Strategy == nil {
		errs = append(errs, field.Forbidden(spec.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

// GetAttrs returns the labels and selectable fields of a lease.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return nil, nil, fmt.Errorf("not a lease: %T", obj)
	}
	ls, fs := registry.Attrs(&l.ObjectMeta, true, nil)
	return ls, fs, nil
}
