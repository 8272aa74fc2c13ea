// Package conflictreport shows a merge conflict in the status of the object
// that merged (an AutomatedMerge, a Heaven's remote): the object without the
// key's leading '/', values cut to what a status may hold.
package conflictreport

import (
	"strings"
	"unicode/utf8"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// Of is conflict c of a merge from src as status shows it.
func Of(src string, c merge.Conflict) v1alpha1.MergeConflict {
	return v1alpha1.MergeConflict{
		Heaven:     src,
		Object:     strings.TrimPrefix(c.Key, "/"),
		Path:       c.Path,
		Base:       truncated(c.Base),
		Target:     truncated(c.Target),
		Source:     truncated(c.Source),
		Resolution: v1alpha1.ConflictResolution(c.Resolution),
	}
}

// truncated is a value cut to MaxConflictValueLength bytes (on a character
// boundary, marked with "…"); nil stays nil (absent).
func truncated(v []byte) *string {
	if v == nil {
		return nil
	}
	s := strings.TrimSuffix(string(v), "\n")
	if len(s) > v1alpha1.MaxConflictValueLength {
		cut := v1alpha1.MaxConflictValueLength
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return &s
}
