// Package registry holds what the built-in resources' strategies share; each
// resource lives in its own subpackage.
package registry

import (
	"context"
	"sort"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
)

// Strategy is the part of a REST strategy every built-in resource shares:
// types from the built-in scheme, simple generated names, no create on
// update, unconditional updates allowed, no warnings.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the shared strategy over the built-in scheme.
func NewStrategy() Strategy {
	return Strategy{ObjectTyper: scheme.Scheme, NameGenerator: names.SimpleNameGenerator}
}

func (Strategy) AllowCreateOnUpdate(context.Context) bool                  { return false }
func (Strategy) AllowUnconditionalUpdate(context.Context) bool             { return true }
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}
func (Strategy) Canonicalize(runtime.Object) {}

// MetadataPath is where every object's metadata is validated.
var MetadataPath = field.NewPath("metadata")

// ValidateMeta validates metadata with the resource's name rule.
func ValidateMeta(m *metav1.ObjectMeta, namespaced bool, name apivalidation.ValidateNameFunc) field.ErrorList {
	return apivalidation.ValidateObjectMeta(m, namespaced, name, MetadataPath)
}

// ValidateMetaUpdate validates the metadata of an update.
func ValidateMetaUpdate(m, old *metav1.ObjectMeta) field.ErrorList {
	return apivalidation.ValidateObjectMetaUpdate(m, old, MetadataPath)
}

// ValidateDataKeys checks configmap and secret keys, in sorted order so
// errors are stable.
func ValidateDataKeys(keys []string, path *field.Path) field.ErrorList {
	sort.Strings(keys)
	var errs field.ErrorList
	for _, k := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
	}
	return errs
}

// Attrs returns an object's labels and its metadata field set merged with the
// resource's extra selectable fields.
func Attrs(m *metav1.ObjectMeta, namespaced bool, extra fields.Set) (labels.Set, fields.Set) {
	return m.Labels, generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(m, namespaced), extra)
}
