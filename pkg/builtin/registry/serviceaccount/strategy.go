// Package serviceaccount stores core/v1 ServiceAccounts.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for service accounts.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return validate(obj.(*corev1.ServiceAccount))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	sa := obj.(*corev1.ServiceAccount)
	errs := registry.ValidateMetaUpdate(&sa.ObjectMeta, &old.(*corev1.ServiceAccount).ObjectMeta)
	return append(errs, validate(sa)...)
}

func validate(sa *corev1.ServiceAccount) field.ErrorList {
	errs := registry.ValidateMeta(&sa.ObjectMeta, true, apivalidation.ValidateServiceAccountName)
	for i, s := range sa.Secrets {
		if s.Name == "" {
			errs = append(errs, field.Required(field.NewPath("secrets").Index(i).Child("name"), ""))
		}
	}
	for i, s := range sa.ImagePullSecrets {
		if s.Name == "" {
			errs = append(errs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return errs
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
