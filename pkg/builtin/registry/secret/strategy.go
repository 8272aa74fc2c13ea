// Package secret stores core/v1 Secrets.
package secret

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
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy for secrets.
var Strategy = strategy{registry.NewStrategy()}

func (strategy) NamespaceScoped() bool { return true }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	prepare(obj.(*corev1.Secret))
}

func (strategy) PrepareForUpdate(_ context.Context, obj, _ runtime.Object) {
	prepare(obj.(*corev1.Secret))
}

// prepare folds the write-only stringData into data, as Kubernetes' v1
// conversion does; our conversions are identities, so it happens here.
func prepare(s *corev1.Secret) {
	k8scorev1.SetDefaults_Secret(s)
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return registry.Validate(obj, corevalidation.ValidateSecret)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return registry.ValidateUpdate(obj, old, corevalidation.ValidateSecretUpdate)
}

// GetAttrs returns the labels and selectable fields (including type) of a secret.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, nil, fmt.Errorf("not a secret: %T", obj)
	}
	l, f := registry.Attrs(&s.ObjectMeta, true, fields.Set{"type": string(s.Type)})
	return l, f, nil
}
