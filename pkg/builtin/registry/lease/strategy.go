// Package lease stores coordination.k8s.io/v1 Leases.
package lease

import (
	"context"
	"fmt"

	coordinationvalidation "k8s.io/kubernetes/pkg/apis/coordination/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var strategies = sets.New(coordinationv1.OldestEmulationVersion)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for leases.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, coordinationvalidation.ValidateLease)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, coordinationvalidation.ValidateLeaseUpdate)
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
