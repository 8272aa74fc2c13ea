package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestAllHeavens lists and watches config maps across heavens at
// /clusters/*, as an administrator with client-go: every heaven's objects,
// each naming its heaven, stopped heavens included; a watch resumed from
// the resource version of its last event after heaven-server restarted
// sees what happened meanwhile in every heaven. Others are refused.
func TestAllHeavens(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.IdleTimeout = 3 * time.Second })
	ctx := t.Context()
	create := func(heaven, name string) {
		t.Helper()
		_, err := ts.Kube(heaven).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	create("east", "a")
	create("west", "b")
	all := func() kubernetes.Interface {
		cfg := ts.RESTConfig(server.RootHeaven)
		cfg.Host = ts.URL() + server.ClustersPrefix + server.AllHeavens
		return kubernetes.NewForConfigOrDie(cfg)
	}

	// Stopped heavens are read too (from git).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "1", scrapeMetric(c, ts, "heaven_active_heavens"), "only root runs: east and west idled out")
	}, 30*time.Second, 100*time.Millisecond)
	list, err := all().CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	where := map[string]string{}
	for _, cm := range list.Items {
		where[cm.Name] = cm.Annotations[server.HeavenAnnotation]
	}
	assert.Equal(t, map[string]string{"a": "east", "b": "west"}, where)

	w, err := all().CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	require.NoError(t, err)
	create("east", "c")
	ev := nextEvent(t, w)
	assert.Equal(t, watch.Added, ev.Type)
	cm := ev.Object.(*corev1.ConfigMap)
	assert.Equal(t, "c", cm.Name)
	assert.Equal(t, "east", cm.Annotations[server.HeavenAnnotation])
	w.Stop()

	// heaven-server restarts; meanwhile-changes are seen by a watch
	// resumed where the last one left off.
	require.NoError(t, ts.Stop())
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, ts.Start(startCtx))
	create("west", "d")
	require.NoError(t, ts.Kube("east").CoreV1().ConfigMaps("default").Delete(ctx, "a", metav1.DeleteOptions{}))
	w, err = all().CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion})
	require.NoError(t, err)
	defer w.Stop()
	seen := map[string]watch.EventType{}
	for len(seen) < 2 {
		ev := nextEvent(t, w)
		seen[ev.Object.(*corev1.ConfigMap).Name] = ev.Type
	}
	assert.Equal(t, map[string]watch.EventType{"d": watch.Added, "a": watch.Deleted}, seen)

	// Only for administrators.
	out, err := kubectlAs(t, ts, "bob")(server.AllHeavens, "get", "--raw", "/api/v1/configmaps")
	forbidden(t, out, err, "/clusters/* for bob")
}

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		require.True(t, ok, "the watch ended")
		require.NotEqual(t, watch.Error, ev.Type, "%v", ev.Object)
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no event in 30s")
	}
	return watch.Event{}
}
