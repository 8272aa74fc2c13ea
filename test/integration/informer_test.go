package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestInformerAndCompaction: a client-go informer lists and watches a
// heaven; once history is compacted, a watch from an old resourceVersion
// gets 410 Gone, and the informer (which relists on it) still converges.
func TestInformerAndCompaction(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.CompactionInterval = 300 * time.Millisecond })
	const h = "informed"
	ctx := t.Context()
	kube := ts.Kube(h)
	create := func(name string) string {
		cm, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		return cm.ResourceVersion
	}
	oldRV := create("first")

	factory := informers.NewSharedInformerFactory(kube, 0)
	cms := factory.Core().V1().ConfigMaps()
	informer := cms.Informer()
	factory.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), informer.HasSynced))
	for i := range 5 {
		create(fmt.Sprintf("cm-%d", i))
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := cms.Lister().ConfigMaps("default").List(labels.Everything())
		require.NoError(c, err)
		assert.Len(c, list, 6)
	}, 30*time.Second, tick, "informer sees every configmap")

	// Keep writing until the compactor has passed oldRV: a watch from it
	// is then 410 Gone.
	filler := 0
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		filler++
		_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("filler-%d", filler)}}, metav1.CreateOptions{})
		require.NoError(c, err)
		w, err := kube.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
		if err != nil {
			assert.True(c, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "watch: %v", err)
			return
		}
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			require.Equal(c, watch.Error, ev.Type, "the first event of a watch from %s", oldRV)
			st := apierrors.FromObject(ev.Object)
			assert.True(c, apierrors.IsResourceExpired(st) || apierrors.IsGone(st), "watch: %v", st)
		case <-time.After(2 * time.Second):
			c.Errorf("no event in 2s from a watch from %s", oldRV)
		}
	}, 30*time.Second, tick, "watch from a compacted revision is 410 Gone")
	create("after-compaction")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := cms.Lister().ConfigMaps("default").Get("after-compaction")
		assert.NoError(c, err)
	}, 30*time.Second, tick, "informer still converges")
}
