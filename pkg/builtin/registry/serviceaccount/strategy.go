// Package serviceaccount stores core/v1 ServiceAccounts.
package serviceaccount

import (
	"context"
	"fmt"

	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for service accounts.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, corevalidation.ValidateServiceAccount)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, corevalidation.ValidateServiceAccountUpdate)
}

// GetAttrs returns the labels and selectable fields of a service account.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return nil, nil, fmt.Errorf("not a service account: %T", obj)
	}
	l, f := registry.Attrs(&sa.ObjectMeta, true, nil)
	return l, f, nil
}
