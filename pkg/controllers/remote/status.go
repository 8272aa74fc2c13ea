package remote

import (
	"bytes"
	"encoding/json"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/conflictreport"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// reportConflict is a conflict of a merge of the remote branch as status
// shows it; its heaven is "remote/<branch>".
func reportConflict(branch string, c merge.Conflict) v1alpha1.MergeConflict {
	return conflictreport.Of("remote/"+branch, c)
}

func shown(s *string) string {
	if s == nil {
		return "<absent>"
	}
	return *s
}

func orWhole(path string) string {
	if path == "" {
		return "(object)"
	}
	return path
}

// copyOf copies a status value by its JSON form (the API types have no
// generated deep copies).
func copyOf[T any](in *T) *T {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(err) // API types always marshal
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}

// equalStatus compares two statuses as the API server stores them.
func equalStatus(a, b *v1alpha1.HeavenStatus) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}
