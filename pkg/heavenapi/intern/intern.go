// Package intern shares, between the heavens of one process, structures
// that upstream builds anew for every API server although they are equal
// and never change once built: the compiled paths and documentation of
// go-restful routes, and the CEL environments of the admission webhooks.
// Together they are about half of what a running generic heaven costs
// (measured with make bench-server, scale phase).
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

// table keeps the first value seen for each key.
type table struct {
	m sync.Map
	// exact: the key tells values apart; else a value is shared only if
	// deeply equal to the one kept, and the key only saves comparisons.
	exact bool
}

// share returns the value kept for key if it is the same as v, else v
// (keeping v if there is none).
func (t *table) share(key string, v reflect.Value) reflect.Value {
	kept, loaded := t.m.LoadOrStore(key, v)
	if !loaded {
		return v
	}
	if k := kept.(reflect.Value); t.exact || reflect.DeepEqual(k.Interface(), v.Interface()) {
		return k
	}
	return v
}
