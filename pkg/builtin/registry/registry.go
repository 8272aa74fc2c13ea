// Package registry holds what the built-in resources' strategies share; each
// resource lives in its own subpackage.
package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
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

// Attrs returns an object's labels and its metadata field set merged with the
// resource's extra selectable fields.
func Attrs(m *metav1.ObjectMeta, namespaced bool, extra fields.Set) (labels.Set, fields.Set) {
	return m.Labels, generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(m, namespaced), extra)
}
