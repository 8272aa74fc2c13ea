package remote

import (
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
