package automatedmerge

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitstoretest"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	heavenfake "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/fake"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// testController runs the controller's informer over a fake root heaven
// holding ams, merging branches of repo; events go to a FakeRecorder.
func testController(t *testing.T, repo *gitstore.Repository, ams ...*v1alpha1.AutomatedMerge) (*Controller, *record.FakeRecorder) {
	t.Helper()
	var objs []runtime.Object
	for _, am := range ams {
		objs = append(objs, am)
	}
	c := New(heavenfake.NewSimpleClientset(objs...), nil, Branches{
		Commits: repo,
		Head: func(_ context.Context, name string) (plumbing.Hash, error) {
			h, _, err := repo.Head(name)
			return h, err
		},
		Open: func(ctx context.Context, name string) (gitstore.MergeTarget, error) { return repo.Branch(ctx, name) },
	})
	t.Cleanup(c.events.Shutdown)
	events := record.NewFakeRecorder(100)
	c.recorder = events
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced))
	return c, events
}

func drain(events *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// reconcileStatus reconciles name and returns its status as written.
func reconcileStatus(t *testing.T, c *Controller, name string) v1alpha1.AutomatedMergeStatus {
	t.Helper()
	ctx := context.Background()
	resync, err := c.reconcile(ctx, name)
	require.NoError(t, err)
	assert.Equal(t, defaultInterval, resync)
	am, err := c.client.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	// The informer sees the status before the next reconcile.
	require.Eventually(t, func() bool {
		cached, err := c.lister.Get(name)
		return err == nil && cached.ResourceVersion == am.ResourceVersion && apiequality.Semantic.DeepEqual(cached.Status, am.Status)
	}, 5*time.Second, 10*time.Millisecond)
	return am.Status
}

func mergeObject(name, source, target string, def v1alpha1.ConflictResolution) *v1alpha1.AutomatedMerge {
	return &v1alpha1.AutomatedMerge{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec: v1alpha1.AutomatedMergeSpec{Sources: []string{source}, Target: target,
			ConflictPolicy: v1alpha1.ConflictPolicy{Default: def}},
	}
}

func TestReconcileMergesAndReportsOnce(t *testing.T) {
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, ctrl, gitstoretest.W1, gitstoretest.Widget(1, "true"))
	c, events := testController(t, repo, mergeObject("ctrl-to-main", "ctrl", "main", v1alpha1.Manual))

	st := reconcileStatus(t, c, "ctrl-to-main")
	assert.JSONEq(t, gitstoretest.Widget(1, "true"), gitstoretest.Value(t, main, gitstoretest.W1))
	require.Len(t, st.Sources, 1)
	s := st.Sources[0]
	assert.Equal(t, ctrl.Head().String(), s.SourceCommit)
	assert.Equal(t, main.Head().String(), s.TargetCommit)
	assert.Equal(t, main.Revision(), s.Revision)
	assert.Equal(t, int32(1), s.ObjectsChanged)
	assert.Equal(t, int32(1), st.ObjectsChanged)
	assert.Equal(t, int64(1), st.ObservedGeneration)
	got := drain(events)
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "Normal Merged Merged heaven ctrl"), got[0])

	// Nothing new: nothing written, nothing reported.
	head := main.Head()
	reconcileStatus(t, c, "ctrl-to-main")
	assert.Equal(t, head, main.Head())
	assert.Empty(t, drain(events))
}

func TestReconcileBlockedByManualConflictReportsOnceAndUnblocks(t *testing.T) {
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, main, gitstoretest.W1, gitstoretest.Widget(2, ""))
	gitstoretest.Put(t, ctrl, gitstoretest.W1, gitstoretest.Widget(3, ""))
	c, events := testController(t, repo, mergeObject("ctrl-to-main", "ctrl", "main", v1alpha1.Manual))
	head := main.Head()

	st := reconcileStatus(t, c, "ctrl-to-main")
	assert.Equal(t, head, main.Head(), "the target is untouched")
	require.Len(t, st.Sources, 1)
	assert.True(t, st.Sources[0].Blocked)
	assert.Equal(t, ctrl.Head().String(), st.Sources[0].BlockedCommit)
	require.Len(t, st.Conflicts, 1)
	assert.Equal(t, ".spec.size", st.Conflicts[0].Path)
	assert.Equal(t, v1alpha1.Manual, st.Conflicts[0].Resolution)
	assert.Equal(t, "Blocked", findCondition(st, v1alpha1.ConditionReady).Reason)
	assert.Equal(t, "True", string(findCondition(st, v1alpha1.ConditionConflicted).Status))
	got := strings.Join(drain(events), "\n")
	assert.Contains(t, got, "Warning MergeConflict")
	assert.Contains(t, got, "Warning MergeBlocked")

	// The same attempt is not made again.
	reconcileStatus(t, c, "ctrl-to-main")
	assert.Empty(t, drain(events))

	// A write to the blocked target wakes the merge; once the sides agree
	// it is unblocked.
	c.BranchMoved("main")
	assert.Equal(t, 1, c.loop.Queue().Len())
	gitstoretest.Put(t, main, gitstoretest.W1, gitstoretest.Widget(3, ""))
	st = reconcileStatus(t, c, "ctrl-to-main")
	assert.False(t, st.Sources[0].Blocked)
	assert.Empty(t, st.Conflicts)
	assert.Equal(t, "True", string(findCondition(st, v1alpha1.ConditionReady).Status))
}

func TestBranchMovedWakesMergesFromIt(t *testing.T) {
	repo, _, _ := gitstoretest.Pair(t)
	off := false
	quiet := mergeObject("interval-only", "ctrl", "main", v1alpha1.Manual)
	quiet.Spec.Trigger.OnChange = &off
	c, _ := testController(t, repo, mergeObject("ctrl-to-main", "ctrl", "main", v1alpha1.Manual), quiet)
	for c.loop.Queue().Len() > 0 { // the informer's adds
		k, _ := c.loop.Queue().Get()
		c.loop.Queue().Done(k)
	}
	c.BranchMoved("ctrl")
	require.Equal(t, 1, c.loop.Queue().Len())
	k, _ := c.loop.Queue().Get()
	assert.Equal(t, "ctrl-to-main", k, "onChange: false waits for its interval")
	c.loop.Queue().Done(k)
	c.BranchMoved("main")
	assert.Equal(t, 0, c.loop.Queue().Len(), "a target's move matters only to a blocked merge")
}

func findCondition(st v1alpha1.AutomatedMergeStatus, typ string) metav1.Condition {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
