// Package secret stores core/v1 Secrets.
package secret

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
)

// maxSize bounds a secret's data like Kubernetes does (1 MiB).
const maxSize = 1 << 20

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
	scheme.SetDefaultsSecret(s)
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
	return validate(obj.(*corev1.Secret))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	s, oldS := obj.(*corev1.Secret), old.(*corev1.Secret)
	errs := registry.ValidateMetaUpdate(&s.ObjectMeta, &oldS.ObjectMeta)
	errs = append(errs, apivalidation.ValidateImmutableField(s.Type, oldS.Type, field.NewPath("type"))...)
	if oldS.Immutable != nil && *oldS.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !apiequality.Semantic.DeepEqual(s.Data, oldS.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
	}
	return append(errs, validate(s)...)
}

func validate(s *corev1.Secret) field.ErrorList {
	errs := registry.ValidateMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	dataPath := field.NewPath("data")
	size := 0
	keys := make([]string, 0, len(s.Data))
	for k, v := range s.Data {
		keys = append(keys, k)
		size += len(v)
	}
	errs = append(errs, registry.ValidateDataKeys(keys, dataPath)...)
	if size > maxSize {
		errs = append(errs, field.TooLong(dataPath, "", maxSize))
	}
	return append(errs, validateType(s, dataPath)...)
}

// validateType checks the keys and annotations each well-known type requires.
func validateType(s *corev1.Secret, dataPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	requireKey := func(k string) {
		if _, ok := s.Data[k]; !ok {
			errs = append(errs, field.Required(dataPath.Key(k), ""))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(registry.MetadataPath.Child("annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		requireKey(corev1.DockerConfigKey)
	case corev1.SecretTypeDockerConfigJson:
		requireKey(corev1.DockerConfigJsonKey)
	case corev1.SecretTypeBasicAuth:
		_, user := s.Data[corev1.BasicAuthUsernameKey]
		_, pass := s.Data[corev1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), "or "+corev1.BasicAuthPasswordKey))
		}
	case corev1.SecretTypeSSHAuth:
		requireKey(corev1.SSHAuthPrivateKey)
	case corev1.SecretTypeTLS:
		requireKey(corev1.TLSCertKey)
		requireKey(corev1.TLSPrivateKeyKey)
	}
	return errs
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
