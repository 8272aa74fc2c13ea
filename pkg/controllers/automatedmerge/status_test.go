package automatedmerge

import (
	"testing"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitstoretest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/merge"
)

func TestSetConflictsReplacesOneSourcesAndCaps(t *testing.T) {
	var st v1alpha1.AutomatedMergeStatus
	many := make([]merge.Conflict, 70)
	for i := range many {
		many[i] = merge.Conflict{Key: gitstoretest.W1, Path: ".spec.x", Resolution: merge.Manual}
	}
	setConflicts(&st, "a", many[:3])
	setConflicts(&st, "b", many)
	assert.Len(t, st.Conflicts, v1alpha1.MaxReportedConflicts)
	setConflicts(&st, "b", nil)
	assert.Len(t, st.Conflicts, 3, "a's stay")
	keepSources(&st, []string{"b"})
	assert.Empty(t, st.Conflicts, "a is no longer a source")
}

func TestSummarizeConditions(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		sources                     []v1alpha1.SourceMergeStatus
		ready, readyReason, conflic string
	}{
		{"merged", []v1alpha1.SourceMergeStatus{{Heaven: "a", ObjectsChanged: 2}}, "True", v1alpha1.ReasonMerged, v1alpha1.ReasonNoConflicts},
		{"resolved", []v1alpha1.SourceMergeStatus{{Heaven: "a", Conflicts: 1}}, "True", v1alpha1.ReasonMerged, v1alpha1.ReasonResolved},
		{"blocked", []v1alpha1.SourceMergeStatus{{Heaven: "a", Conflicts: 1, Blocked: true}}, "False", v1alpha1.ReasonBlocked, v1alpha1.ReasonBlocked},
		{"failed", []v1alpha1.SourceMergeStatus{{Heaven: "a", Message: "boom"}, {Heaven: "b"}}, "False", v1alpha1.ReasonFailed, v1alpha1.ReasonNoConflicts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := v1alpha1.AutomatedMergeStatus{Sources: tc.sources}
			summarize(&st, 3)
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.ready, string(ready.Status))
			assert.Equal(t, tc.readyReason, ready.Reason)
			assert.Equal(t, int64(3), ready.ObservedGeneration)
			assert.Equal(t, tc.conflic, meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionConflicted).Reason)
		})
	}
}
