package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/server"
)

// TestInformerAndCompaction: a client-go informer lists and watches a
// heaven; once history is compacted, a watch from an old resourceVersion
// gets 410 Gone, and the informer (which relists on it) still converges.
func TestInformerAndCompaction(t *testing.T) {
	ts := startServer(t, "", func(o *server.Options) { o.CompactionInterval = 300 * time.Millisecond })
	const h = "informed"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := ts.kube(h)
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
	eventually(t, 30*time.Second, "informer sees every configmap", func() (bool, error) {
		list, err := cms.Lister().ConfigMaps("default").List(everything())
		return len(list) == 6, err
	})

	// Keep writing until the compactor has passed oldRV: a watch from it
	// is then 410 Gone.
	eventually(t, 30*time.Second, "watch from a compacted revision is 410 Gone", func() (bool, error) {
		create(fmt.Sprintf("filler-%d", time.Now().UnixNano()))
		w, err := kube.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
		if err != nil {
			return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), nil
		}
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Error {
				st := apierrors.FromObject(ev.Object)
				return apierrors.IsResourceExpired(st) || apierrors.IsGone(st), nil
			}
			return false, nil
		case <-time.After(2 * time.Second):
			return false, nil
		}
	})
	create("after-compaction")
	eventually(t, 30*time.Second, "informer still converges", func() (bool, error) {
		_, err := cms.Lister().ConfigMaps("default").Get("after-compaction")
		return err == nil, nil
	})
}
