// Package asstored compares API values as the API server stores them, so
// that a controller writes a status only when what is stored would change.
package asstored

import (
	"bytes"
	"encoding/json"
)

// Equal says whether a and b have the same JSON form: times equal to the
// second, and empty and nil lists alike where they are omitted. Values
// that do not marshal are never equal.
func Equal(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
