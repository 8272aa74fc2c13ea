package registry

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	// The internal types and conversions of the built-in groups served.
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
)

// Kubernetes' own validation and printing work on its internal types
// (k8s.io/kubernetes/pkg/apis/...). The objects served here are the
// versioned ones: they are converted with Kubernetes' own conversions, into
// a copy, and checked or printed as kube-apiserver would.

// toInternal converts a versioned built-in object or list to Kubernetes'
// internal version of its kind.
func toInternal(obj runtime.Object) (runtime.Object, error) {
	kinds, _, err := legacyscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	gvk := kinds[0]
	gvk.Version = runtime.APIVersionInternal
	out, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	if err := legacyscheme.Scheme.Convert(obj, out, nil); err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	return out, nil
}

// Validate checks obj with Kubernetes' validation of its internal type I.
func Validate[I runtime.Object](obj runtime.Object, validate func(I) field.ErrorList) field.ErrorList {
	in, err := toInternal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validate(in.(I))
}

// ValidateUpdate checks an update of old to obj with Kubernetes' validation
// of their internal type I.
func ValidateUpdate[I runtime.Object](obj, old runtime.Object, validate func(obj, old I) field.ErrorList) field.ErrorList {
	in, err := toInternal(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	was, err := toInternal(old)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return validate(in.(I), was.(I))
}
