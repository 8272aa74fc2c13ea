package automatedmerge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// A reconcile that starts from a cached object older than the status that
// reported the last merge reports that merge again, not the older status.
func TestReportMergedOverStaleStatus(t *testing.T) {
	c := &Controller{attempts: map[attemptKey]attempt{}, merged: map[attemptKey]mergedRecord{}}
	k := attemptKey{merge: "m", source: "main"}
	now := metav1.Now()
	c.rememberMerged(k, &v1alpha1.SourceMergeStatus{Heaven: "main", SourceCommit: "s2", TargetCommit: "t2", Revision: 20, LastMergeTime: &now, ObjectsChanged: 3})

	for _, tc := range []struct {
		name         string
		cached, want v1alpha1.SourceMergeStatus
	}{
		{"no merge reported yet", v1alpha1.SourceMergeStatus{Heaven: "main"},
			v1alpha1.SourceMergeStatus{Heaven: "main", SourceCommit: "s2", TargetCommit: "t2", Revision: 20, LastMergeTime: &now, ObjectsChanged: 3}},
		{"an older merge", v1alpha1.SourceMergeStatus{Heaven: "main", SourceCommit: "s1", TargetCommit: "t1", Revision: 10},
			v1alpha1.SourceMergeStatus{Heaven: "main", SourceCommit: "s2", TargetCommit: "t2", Revision: 20, LastMergeTime: &now, ObjectsChanged: 3}},
		{"the same merge", v1alpha1.SourceMergeStatus{Heaven: "main", SourceCommit: "s2", TargetCommit: "t2", Revision: 20},
			v1alpha1.SourceMergeStatus{Heaven: "main", SourceCommit: "s2", TargetCommit: "t2", Revision: 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.cached
			c.reportMerged(k, &st)
			assert.Equal(t, tc.want, st)
		})
	}
	other := v1alpha1.SourceMergeStatus{Heaven: "other"}
	c.reportMerged(attemptKey{merge: "m", source: "other"}, &other)
	assert.Empty(t, other.SourceCommit, "nothing merged from this source")
	c.forget("m")
	stale := v1alpha1.SourceMergeStatus{Heaven: "main"}
	c.reportMerged(k, &stale)
	assert.Empty(t, stale.SourceCommit, "forgotten with its merge")
}
