package automatedmerge

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/conflictreport"
	"github.com/heaven-dev/heaven/pkg/merge"
)

type mergeConflict = merge.Conflict

// sourceStatus returns the status entry of source src, adding it if
// missing.
func sourceStatus(status *v1alpha1.AutomatedMergeStatus, src string) *v1alpha1.SourceMergeStatus {
	for i := range status.Sources {
		if status.Sources[i].Heaven == src {
			return &status.Sources[i]
		}
	}
	status.Sources = append(status.Sources, v1alpha1.SourceMergeStatus{Heaven: src})
	return &status.Sources[len(status.Sources)-1]
}

// keepSources drops the status of sources the spec no longer names.
func keepSources(status *v1alpha1.AutomatedMergeStatus, sources []string) {
	named := map[string]bool{}
	for _, s := range sources {
		named[s] = true
	}
	var kept []v1alpha1.SourceMergeStatus
	for _, s := range status.Sources {
		if named[s.Heaven] {
			kept = append(kept, s)
		}
	}
	status.Sources = kept
	var conflicts []v1alpha1.MergeConflict
	for _, cf := range status.Conflicts {
		if named[cf.Heaven] {
			conflicts = append(conflicts, cf)
		}
	}
	status.Conflicts = conflicts
}

// setConflicts replaces the reported conflicts of source src, keeping the
// list within MaxReportedConflicts.
func setConflicts(status *v1alpha1.AutomatedMergeStatus, src string, conflicts []mergeConflict) {
	var out []v1alpha1.MergeConflict
	for _, cf := range status.Conflicts {
		if cf.Heaven != src {
			out = append(out, cf)
		}
	}
	for _, cf := range conflicts {
		if len(out) >= v1alpha1.MaxReportedConflicts {
			break
		}
		out = append(out, conflictreport.Of(src, cf))
	}
	status.Conflicts = out
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

// summarize fills in the counts and conditions from the sources' status.
func summarize(status *v1alpha1.AutomatedMergeStatus, generation int64) {
	status.ObjectsChanged, status.ConflictCount = 0, 0
	var failed, blocked []string
	for _, s := range status.Sources {
		status.ObjectsChanged += s.ObjectsChanged
		status.ConflictCount += s.Conflicts
		if s.Message != "" {
			failed = append(failed, fmt.Sprintf("%s: %s", s.Heaven, s.Message))
		}
		if s.Blocked {
			blocked = append(blocked, s.Heaven)
		}
	}
	switch {
	case len(failed) > 0:
		setReady(status, generation, metav1.ConditionFalse, v1alpha1.ReasonFailed, strings.Join(failed, "; "))
	case len(blocked) > 0:
		setReady(status, generation, metav1.ConditionFalse, v1alpha1.ReasonBlocked,
			fmt.Sprintf("conflicts resolved Manual keep %s from merging", strings.Join(blocked, ", ")))
	default:
		setReady(status, generation, metav1.ConditionTrue, v1alpha1.ReasonMerged, "every source is merged")
	}
	switch {
	case len(blocked) > 0:
		setCondition(status, generation, v1alpha1.ConditionConflicted, metav1.ConditionTrue, v1alpha1.ReasonBlocked,
			fmt.Sprintf("%d conflicts; resolve them in the target or the source, or change the conflict policy", status.ConflictCount))
	case status.ConflictCount > 0:
		setCondition(status, generation, v1alpha1.ConditionConflicted, metav1.ConditionTrue, v1alpha1.ReasonResolved,
			fmt.Sprintf("the last merges had %d conflicts, resolved by the conflict policy", status.ConflictCount))
	default:
		setCondition(status, generation, v1alpha1.ConditionConflicted, metav1.ConditionFalse, v1alpha1.ReasonNoConflicts, "the last merges had no conflicts")
	}
}

func setReady(status *v1alpha1.AutomatedMergeStatus, generation int64, s metav1.ConditionStatus, reason, msg string) {
	setCondition(status, generation, v1alpha1.ConditionReady, s, reason, msg)
}

func setCondition(status *v1alpha1.AutomatedMergeStatus, generation int64, typ string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation,
	})
}
