package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestKubeAPIServerOnAHeavensBranch runs a stock kube-apiserver on heaven
// kas's branch, through heaven-server's etcd API in kube-apiserver's key
// layout, while heaven-server serves the same heaven and merges it into
// another. What either API server writes, the other reads; what
// kube-apiserver writes is merged into main like any heaven's change; its
// Leases and Events go to heaven-server's etcd of ephemeral resources
// (--etcd-servers-overrides), not to git.
func TestKubeAPIServerOnAHeavensBranch(t *testing.T) {
	hs := framework.StartHeavenServer(t, func(o *server.Options) {
		o.EtcdAPIURLs = []string{"http://127.0.0.1:0"}
	})
	declare := func(yaml string) {
		t.Helper()
		hs.Kubectl(t, server.RootHeaven, yaml, "apply", "-f", "-")
	}
	declare(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"kas"},"spec":{"type":"kubernetes"}}`)
	declare(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"main"},"spec":{"type":"kubernetes"}}`)
	waitHeaven(t, hs, "kas")
	waitHeaven(t, hs, "main")
	// Two clusters bootstrapped on their own (their namespaces, roles,
	// kubernetes Services) differ in ways no policy should guess: the merge
	// carries ConfigMaps, main's winning where both wrote one.
	declare(`{"apiVersion":"heaven.dev/v1alpha1","kind":"AutomatedMerge","metadata":{"name":"kas-to-main"},` +
		`"spec":{"sources":["kas"],"target":"main","resources":["core/configmaps"],"conflictPolicy":{"default":"PreferTarget"}}}`)

	ephemeral := strings.Join(hs.EphemeralEtcdURLs(), ";")
	kas := framework.StartKubeAPIServer(t, "kas",
		"--etcd-servers="+hs.EtcdAPIURLs()[0],
		"--etcd-prefix=/kas/registry",
		"--storage-media-type=application/json",
		"--etcd-compaction-interval=0",
		"--etcd-servers-overrides=coordination.k8s.io/leases#"+ephemeral+",/events#"+ephemeral,
	)
	ctx := t.Context()

	// Written through kube-apiserver: the heaven serves it, main gets it.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-kube-apiserver"}, Data: map[string]string{"written": "by kube-apiserver"}}
	_, err := kas.Client().CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, heaven := range []string{"kas", "main"} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got, err := hs.Kube(heaven).CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, cm.Data, got.Data)
		}, time.Minute, 100*time.Millisecond, "the ConfigMap kube-apiserver wrote, in heaven %s", heaven)
	}
	// It is the file where heavens keep ConfigMaps.
	assert.Contains(t, hs.Git(t, "ls-tree", "-r", "--name-only", "kas"), "core/configmaps/default/from-kube-apiserver.json")

	// Written in the heaven: kube-apiserver reads it, and sees it change.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "from-heaven"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	_, err = hs.Kube("kas").CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := kas.Client().CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(80), got.Spec.Ports[0].Port)
	}, time.Minute, 100*time.Millisecond, "the Service the heaven wrote, in kube-apiserver")

	// kube-apiserver's own lease is in the ephemeral etcd, not in git.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		leases, err := kas.Client().CoordinationV1().Leases("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "apiserver.kubernetes.io/identity=kube-apiserver"})
		require.NoError(c, err)
		assert.NotEmpty(c, leases.Items)
	}, time.Minute, 100*time.Millisecond, "kube-apiserver's identity lease")
	// Every file is where a heaven keeps its object, under its group, but
	// the node ports' allocation bitmap (a heaven keeps it in etcd).
	for _, file := range strings.Fields(hs.Git(t, "ls-tree", "-r", "--name-only", "kas")) {
		assert.False(t, strings.HasPrefix(file, "coordination.k8s.io/leases/") || strings.HasPrefix(file, "core/events/"), "%s is in git", file)
		switch group, _, _ := strings.Cut(file, "/"); group {
		case "core", "apps", "batch", "policy", "autoscaling", "ranges":
		default:
			assert.Contains(t, group, ".", "%s: not under a group", file)
		}
	}
}
