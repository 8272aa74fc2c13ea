// Package unstructuredconv converts the heaven.dev types, which the
// controllers read and write through dynamic clients, to and from their
// unstructured form, and compares that form.
package unstructuredconv

import (
	"encoding/json"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// FromUnstructured fills out from u.
func FromUnstructured(u *unstructured.Unstructured, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

// ToUnstructured is in as a JSON-like map.
func ToUnstructured(in any) (map[string]any, error) {
	return runtime.DefaultUnstructuredConverter.ToUnstructured(in)
}

// EqualJSON compares two JSON-like maps by their JSON form, so that int64
// and float64 numbers of the same value are equal.
func EqualJSON(a, b map[string]any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}
