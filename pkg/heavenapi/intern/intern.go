// Package intern shares, between the heavens of one process, structures
// that upstream builds anew for every API server although they are equal
// and never change once built: the compiled paths and documentation of
// go-restful routes, and the CEL environments of the admission webhooks.
// Together they are about half of what a running generic heaven costs
// (measured with make bench-server, scale phase). It also drops what an
// API server keeps only for debugging: the stack trace of each path's
// registration in its mux.
//
// The fields are unexported, so they are reached with reflection and
// written with unsafe. Each function checks the layout it expects and
// returns an error, having changed nothing, when a dependency's layout
// differs; callers log it and go on: sharing saves memory and never
// changes behaviour.
package intern

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// field returns v's field name, writable even when unexported. v must be
// addressable.
func field(v reflect.Value, name string) (reflect.Value, error) {
	f := v.FieldByName(name)
	if !f.IsValid() {
		return reflect.Value{}, fmt.Errorf("%s has no field %s", v.Type(), name)
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), nil
}

// table keeps values by key: the first value seen for each key when the
// key tells values apart (exact), else every distinct value seen for it.
type table struct {
	mu sync.Mutex
	m  map[string][]reflect.Value
	// exact: the key tells values apart; else a value is shared only if
	// deeply equal to one kept, and the key only narrows the comparisons.
	exact bool
}

// maxPerKey bounds the values kept for one key: a key that tells values
// apart badly costs comparisons, not memory.
const maxPerKey = 16

// share returns the value kept for key that is the same as v, else v,
// which it keeps if the key has room. kept says whether the value returned
// is in the table: one that is not is nobody else's, and a key made of its
// identity would never be seen again.
func (t *table) share(key string, v reflect.Value) (shared reflect.Value, kept bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string][]reflect.Value{}
	}
	values := t.m[key]
	for _, k := range values {
		if t.exact || reflect.DeepEqual(k.Interface(), v.Interface()) {
			return k, true
		}
	}
	if len(values) < maxPerKey {
		t.m[key] = append(values, v)
		return v, true
	}
	return v, false
}
