package conformance

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/apis/example"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/clock"
)

// TestRequestWatchProgress drives the etcd3 store's progress requester
// itself: with periodic notifications left at their 10-minute default, a
// watcher that has seen everything under its prefix must get a bookmark at
// the current revision after one RequestWatchProgress, even though that
// revision was made by a write outside the prefix.
func TestRequestWatchProgress(t *testing.T) {
	resetFeatureSupportChecker(t)
	e := setup(t)
	waitForProgressSupport(t)

	created := &example.Pod{}
	pod := &example.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}}
	require.NoError(t, e.store.Create(e.ctx, "/pods/ns/a", pod, created, 0))
	current := e.increaseRV()(e.ctx, t)

	ctx, cancel := context.WithTimeout(e.ctx, pollTimeout)
	defer cancel()
	w, err := e.store.Watch(ctx, "/pods/", storage.ListOptions{
		ResourceVersion: created.ResourceVersion,
		Recursive:       true,
		ProgressNotify:  true,
		Predicate:       storage.Everything,
	})
	require.NoError(t, err)
	defer w.Stop()

	// Progress is only promised once the watch is established; ask until
	// a bookmark arrives, each ask with a deadline of its own.
	for {
		require.NoError(t, e.store.RequestWatchProgress(ctx))
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "watch closed before a bookmark arrived")
			require.Equal(t, watch.Bookmark, ev.Type, "unexpected event %#v", ev)
			rv, err := strconv.ParseInt(ev.Object.(metav1.Object).GetResourceVersion(), 10, 64)
			require.NoError(t, err)
			require.Equal(t, current, rv, "the bookmark must carry the current revision")
			return
		case <-time.After(time.Second):
		case <-ctx.Done():
			t.Fatal("no bookmark within the deadline: RequestWatchProgress had no effect")
		}
	}
}

// TestConsistentReadFromCache runs upstream's consistent-list suite against
// a watch cache over the store. A consistent list from the cache asks the
// store for its current revision and then waits until the cache's watch has
// caught up — which, when the newest writes are outside the cached prefix,
// only a progress notification requested through RequestWatchProgress can
// tell it. The timeout fallback to a direct read is switched off, so a
// progress request that goes unanswered fails the test instead of being
// papered over.
func TestConsistentReadFromCache(t *testing.T) {
	for _, snapshots := range []bool{true, false} {
		t.Run(fmt.Sprintf("ListFromCacheSnapshot=%v", snapshots), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, snapshots)
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ConsistentListFromCacheSkipTimeoutFallback, true)
			resetFeatureSupportChecker(t)
			e := setup(t)
			waitForProgressSupport(t)
			c := e.newCacher(t)
			storagetesting.RunTestConsistentList(e.ctx, t, c, e.increaseRV(), true, true, snapshots)
		})
	}
}

// TestCacherWatchBookmarksWithCorrectResourceVersion runs the one optional
// watch function upstream runs only against the watch cache.
func TestCacherWatchBookmarksWithCorrectResourceVersion(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestOptionalWatchBookmarksWithCorrectResourceVersion(e.ctx, t, e.newCacher(t))
}

// newCacher puts a watch cache in front of the store, as the apiserver
// does for every resource, and waits until it is ready.
func (e *testEnv) newCacher(t *testing.T) storage.Interface {
	t.Helper()
	c, err := cacher.NewCacherFromConfig(cacher.Config{
		Storage:             e.store,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       schema.GroupResource{Resource: "pods"},
		EventsHistoryWindow: cacher.DefaultEventFreshDuration,
		ResourcePrefix:      "/pods/",
		KeyFunc: func(obj runtime.Object) (string, error) {
			return storage.NamespaceKeyFunc("/pods/", obj)
		},
		GetAttrsFunc: storage.DefaultNamespaceScopedAttr,
		NewFunc:      newPod,
		NewListFunc:  newPodList,
		Codec:        e.codec,
		Clock:        clock.RealClock{},
	})
	require.NoError(t, err)
	t.Cleanup(c.Stop)
	ctx, cancel := context.WithTimeout(e.ctx, pollTimeout)
	defer cancel()
	require.NoError(t, c.Wait(ctx), "the watch cache did not become ready")
	d := cacher.NewCacheDelegator(c, e.store)
	t.Cleanup(d.Stop)
	return d
}
