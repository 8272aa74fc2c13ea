package remote

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	heavenfake "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/fake"
)

// testController runs the controller's informer over a fake root heaven
// holding hs; events go to a FakeRecorder.
func testController(t *testing.T, g Git, hs ...*v1alpha1.Heaven) (*Controller, *record.FakeRecorder) {
	t.Helper()
	var objs []runtime.Object
	for _, h := range hs {
		objs = append(objs, h)
	}
	c := New(heavenfake.NewSimpleClientset(objs...), nil, g)
	t.Cleanup(c.events.Shutdown)
	t.Cleanup(c.loop.Queue().ShutDown)
	events := record.NewFakeRecorder(100)
	c.recorder = events
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced))
	require.Eventually(t, func() bool { return c.loop.Queue().Len() == len(hs) }, 5*time.Second, time.Millisecond)
	drainQueue(c)
	return c, events
}

// drainQueue takes what the informer's adds queued.
func drainQueue(c *Controller) {
	for c.loop.Queue().Len() > 0 {
		key, _ := c.loop.Queue().Get()
		c.loop.Queue().Forget(key)
		c.loop.Queue().Done(key)
	}
}

func heavenWithRemote(remote *v1alpha1.Remote) *v1alpha1.Heaven {
	return &v1alpha1.Heaven{ObjectMeta: metav1.ObjectMeta{Name: heaven, Generation: 1}, Spec: v1alpha1.HeavenSpec{Remote: remote}}
}

// status reads the Heaven's status from the fake root heaven.
func status(t *testing.T, c *Controller) v1alpha1.HeavenStatus {
	t.Helper()
	h, err := c.client.Get(context.Background(), heaven, metav1.GetOptions{})
	require.NoError(t, err)
	return h.Status
}

func TestReconcileReportsTheExchangeInStatus(t *testing.T) {
	a := newServer(t)
	a.put(t, cmA, `{"v":1}`)
	url := bareRemote(t)
	c, _ := testController(t, a.git, heavenWithRemote(&v1alpha1.Remote{URL: url, Interval: &metav1.Duration{Duration: 3 * time.Second}}))

	resync, err := c.reconcile(context.Background(), heaven)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, resync)
	head, err := a.git.Head(heaven)
	require.NoError(t, err)
	st := status(t, c)
	require.NotNil(t, st.Remote)
	assert.Equal(t, url, st.Remote.URL)
	assert.Equal(t, heaven, st.Remote.Branch, "the branch defaults to the heaven's name")
	assert.Equal(t, head.String(), st.Remote.PushedCommit)
	assert.NotNil(t, st.Remote.LastPushTime)
	assert.NotNil(t, st.Remote.LastFetchTime)
	assert.Empty(t, st.Remote.RemoteCommit, "the remote had no branch when fetched")
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRemoteSynced)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)

	// Nothing new: the same heads are not merged again, and status is not
	// rewritten for a fresher fetch time alone.
	rv := func() string {
		h, err := c.client.Get(context.Background(), heaven, metav1.GetOptions{})
		require.NoError(t, err)
		return h.ResourceVersion
	}
	before := rv()
	_, err = c.reconcile(context.Background(), heaven)
	require.NoError(t, err)
	_, err = c.reconcile(context.Background(), heaven)
	require.NoError(t, err)
	assert.Equal(t, before, rv())
}

func TestReconcileReportsAnUnreachableRemoteAndBacksOff(t *testing.T) {
	a := newServer(t)
	a.put(t, cmA, `{"v":1}`)
	url := filepath.Join(t.TempDir(), "missing.git")
	c, events := testController(t, a.git, heavenWithRemote(&v1alpha1.Remote{URL: url}))

	_, err := c.reconcile(context.Background(), heaven)
	require.ErrorIs(t, err, errFetch)
	st := status(t, c)
	require.NotNil(t, st.Remote)
	assert.EqualValues(t, 1, st.Remote.Failures)
	assert.NotEmpty(t, st.Remote.Message)
	cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRemoteSynced)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, v1alpha1.ReasonRemoteUnreachable, cond.Reason)
	select {
	case e := <-events.Events:
		assert.Contains(t, e, v1alpha1.ReasonRemoteUnreachable)
	default:
		t.Error("no Event for the first failure")
	}

	// While it fails, the heaven's changes wait for the retry.
	c.BranchMoved(heaven, plumbing.NewHash(strings.Repeat("1", 40)))
	assert.Zero(t, c.loop.Queue().Len())
}

func TestInvalidRemoteIsReportedNotRetried(t *testing.T) {
	c, _ := testController(t, newServer(t).git, heavenWithRemote(&v1alpha1.Remote{URL: "ftp://example.com/x", Interval: &metav1.Duration{Duration: time.Millisecond}}))
	resync, err := c.reconcile(context.Background(), heaven)
	require.NoError(t, err)
	assert.Zero(t, resync)
	cond := meta.FindStatusCondition(status(t, c).Conditions, v1alpha1.ConditionRemoteSynced)
	require.NotNil(t, cond)
	assert.Equal(t, v1alpha1.ReasonRemoteInvalid, cond.Reason)
	assert.Contains(t, cond.Message, "interval")
	assert.Contains(t, cond.Message, "unsupported protocol")
}

func TestBranchMovedExchangesOnlyWhatPushes(t *testing.T) {
	head := plumbing.NewHash(strings.Repeat("2", 40))
	c, _ := testController(t, newServer(t).git, heavenWithRemote(&v1alpha1.Remote{URL: "git://127.0.0.1/x"}))
	c.BranchMoved("other", head)
	assert.Zero(t, c.loop.Queue().Len(), "no Heaven")
	c.BranchMoved(heaven, head)
	assert.Equal(t, 1, c.loop.Queue().Len())

	c, _ = testController(t, newServer(t).git, heavenWithRemote(&v1alpha1.Remote{URL: "git://127.0.0.1/x", Push: ptr.To(false)}))
	c.BranchMoved(heaven, head)
	assert.Zero(t, c.loop.Queue().Len(), "a heaven that does not push has nothing to do when it changes")
}

// A conflict resolved Manual blocks the exchange: nothing is merged or
// pushed, the conflict is reported, and it stays reported.
func TestManualConflictBlocksAndIsReported(t *testing.T) {
	url := bareRemote(t)
	a, b := newServer(t), newServer(t)
	a.put(t, cmA, `{"metadata":{"name":"a"},"data":{"x":"a"}}`)
	a.exchange(t, testPlan(t, url))
	b.put(t, cmA, `{"metadata":{"name":"a"},"data":{"x":"b"}}`)
	c, events := testController(t, b.git, heavenWithRemote(&v1alpha1.Remote{URL: url,
		ConflictPolicy: &v1alpha1.ConflictPolicy{Default: v1alpha1.Manual}}))
	headBefore, err := b.git.Head(heaven)
	require.NoError(t, err)

	for range 2 {
		_, err := c.reconcile(context.Background(), heaven)
		require.NoError(t, err)
		st := status(t, c)
		cond := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionRemoteSynced)
		require.NotNil(t, cond)
		assert.Equal(t, v1alpha1.ReasonRemoteBlocked, cond.Reason)
		require.NotNil(t, st.Remote)
		assert.EqualValues(t, 1, st.Remote.ConflictCount)
		require.Len(t, st.Remote.Conflicts, 1)
		assert.Equal(t, ".data.x", st.Remote.Conflicts[0].Path)
		assert.Empty(t, st.Remote.PushedCommit)
	}
	head, err := b.git.Head(heaven)
	require.NoError(t, err)
	assert.Equal(t, headBefore, head, "nothing merged")
	var blocked int
	for len(events.Events) > 0 {
		if e := <-events.Events; strings.Contains(e, "MergeBlocked") {
			blocked++
		}
	}
	assert.Equal(t, 1, blocked, "reported once, not at every interval")
}
