package conformance

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/features"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// TestWatch mirrors upstream's etcd3 TestWatch: one subtest per watch suite
// function, each on a fresh backend.
func TestWatch(t *testing.T) {
	t.Run("Watch", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatch(e.ctx, t, e.store)
	})
	t.Run("ClusterScopedWatch", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestClusterScopedWatch(e.ctx, t, e.store)
	})
	t.Run("NamespaceScopedWatch", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestNamespaceScopedWatch(e.ctx, t, e.store)
	})
	t.Run("DeleteTriggerWatch", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestDeleteTriggerWatch(e.ctx, t, e.store)
	})
	t.Run("WatchFromZero", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatchFromZero(e.ctx, t, e.store, e.compaction())
	})
	t.Run("WatchFromNonZero", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatchFromNonZero(e.ctx, t, e.store)
	})
	t.Run("DelayedWatchDelivery", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestDelayedWatchDelivery(e.ctx, t, e.store)
	})
	t.Run("WatchError", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatchError(e.ctx, t, e.withPrefixTransformer())
	})
	t.Run("WatchContextCancel", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatchContextCancel(e.ctx, t, e.store)
	})
	t.Run("WatcherTimeout", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatcherTimeout(e.ctx, t, e.store)
	})
	t.Run("WatchDeleteEventObjectHaveLatestRV", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatchDeleteEventObjectHaveLatestRV(e.ctx, t, e.store)
	})
	t.Run("WatchInitializationSignal", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunTestWatchInitializationSignal(e.ctx, t, e.store)
	})
	t.Run("ProgressNotify", func(t *testing.T) {
		e := setup(t, withProgressNotifyInterval(time.Second))
		storagetesting.RunOptionalTestProgressNotify(e.ctx, t, e.store, e.increaseRV())
	})
	t.Run("WatchWithUnsafeDelete", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
		e := setup(t)
		storagetesting.RunTestWatchWithUnsafeDelete(e.ctx, t, e.withTransformerOverride(e.store), corruptObjectError())
	})
	t.Run("WatchDispatchBookmarkEvents", func(t *testing.T) {
		e := setup(t, withProgressNotifyInterval(time.Second))
		storagetesting.RunTestWatchDispatchBookmarkEvents(e.ctx, t, e.store, false)
	})
	t.Run("SendInitialEventsBackwardCompatibility", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunSendInitialEventsBackwardCompatibility(e.ctx, t, e.store)
	})
	for _, rangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("RangeStream=%v", rangeStream), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.EtcdRangeStream, rangeStream)
			t.Run("WatchSemantics", func(t *testing.T) {
				e := setup(t)
				storagetesting.RunWatchSemantics(e.ctx, t, e.store)
			})
			t.Run("WatchSemanticsWithConcurrentDecode", func(t *testing.T) {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ConcurrentWatchObjectDecode, true)
				e := setup(t)
				storagetesting.RunWatchSemantics(e.ctx, t, e.store)
			})
			t.Run("WatchSemanticInitialEventsExtended", func(t *testing.T) {
				e := setup(t)
				storagetesting.RunWatchSemanticInitialEventsExtended(e.ctx, t, e.store)
			})
			t.Run("WatchListMatchSingle", func(t *testing.T) {
				e := setup(t)
				storagetesting.RunWatchListMatchSingle(e.ctx, t, e.store)
			})
		})
	}
	t.Run("WatchErrorEventIsBlockingFurtherEvent", func(t *testing.T) {
		e := setup(t)
		storagetesting.RunWatchErrorIsBlockingFurtherEvents(e.ctx, t, e.withPrefixTransformer())
	})
}
