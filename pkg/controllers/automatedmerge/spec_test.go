package automatedmerge

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/merge"
)

func TestCompileDefaults(t *testing.T) {
	p, err := compile(v1alpha1.AutomatedMergeSpec{Sources: []string{"ctrl"}, Target: "main"},
		func(r string) bool { return r == "core/events" })
	require.NoError(t, err)
	assert.True(t, p.onChange, "on change by default")
	assert.Equal(t, time.Minute, p.interval, "with a resync every minute")
	assert.Equal(t, merge.Manual, p.merger.Policy.Resolve("core/configmaps", ".spec"), "nothing resolved unless asked")
	assert.True(t, p.include("apps/deployments"), "every resource by default")
	assert.False(t, p.include("core/events"), "but ephemeral ones")
	assert.False(t, p.include(""), "keys that name no resource")
}

func TestCompileResourcesAndPolicy(t *testing.T) {
	off := false
	p, err := compile(v1alpha1.AutomatedMergeSpec{
		Sources: []string{"ctrl"}, Target: "main",
		Trigger:   v1alpha1.MergeTrigger{OnChange: &off, Interval: &metav1.Duration{Duration: 5 * time.Second}},
		Resources: []string{"example.com/widgets", "core/events"},
		ConflictPolicy: v1alpha1.ConflictPolicy{Default: v1alpha1.PreferTarget, Rules: []v1alpha1.ConflictRule{
			{Path: ".status", Resolution: v1alpha1.PreferSource},
		}},
	}, func(r string) bool { return r == "core/events" })
	require.NoError(t, err)
	assert.False(t, p.onChange)
	assert.Equal(t, 5*time.Second, p.interval)
	assert.True(t, p.include("example.com/widgets"))
	assert.False(t, p.include("core/configmaps"))
	assert.False(t, p.include("core/events"), "ephemeral resources never merge, even when named")
	assert.Equal(t, merge.PreferSource, p.merger.Policy.Resolve("example.com/widgets", ".status.ready"))
	assert.Equal(t, merge.PreferTarget, p.merger.Policy.Resolve("example.com/widgets", ".spec.size"))
}

func TestCompileReportsEveryProblem(t *testing.T) {
	_, err := compile(v1alpha1.AutomatedMergeSpec{
		Sources:        []string{"main", "Bad_Name", "x", "x"},
		Target:         "main",
		Trigger:        v1alpha1.MergeTrigger{Interval: &metav1.Duration{Duration: time.Millisecond}},
		Resources:      []string{"widgets"},
		ConflictPolicy: v1alpha1.ConflictPolicy{Default: "Sometimes"},
	}, nil)
	require.Error(t, err)
	for _, want := range []string{`source "main" is the target`, `source "Bad_Name"`, `source "x" is named twice`,
		"trigger.interval", `resource "widgets"`, "conflictPolicy"} {
		assert.Contains(t, err.Error(), want)
	}
}
