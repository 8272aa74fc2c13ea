package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestHeadlessClustersHostEachOther is the seed's second demo: two
// headless clusters, each one's control plane served by the other's
// server, coordinating through one upstream git repository (a git daemon).
// Server blue holds cluster blue (heavens blue, blue-kcm and blue-sched,
// merged both ways), server green cluster green. Each controller heaven
// tracks its branch of the upstream repository, and the other server keeps
// a heaven tracking the same branch: blue's kube-controller-manager and
// kube-scheduler work against server green, green's against server blue.
// A Deployment created in either cluster ends with its pods running there.
// Moving a component is pointing it at another server that tracks the same
// branch: blue's kube-controller-manager moves home to server blue, and a
// scale-up of blue converges as before.
func TestHeadlessClustersHostEachOther(t *testing.T) {
	upstream := startGitDaemon(t)
	blue, green := framework.StartHeavenServer(t, nil), framework.StartHeavenServer(t, nil)
	declareHeadlessCluster(t, blue, headlessHeavens{main: "blue", kcm: "blue-kcm", sched: "blue-sched"}, upstream.url)
	declareHeadlessCluster(t, green, headlessHeavens{main: "green", kcm: "green-kcm", sched: "green-sched"}, upstream.url)
	trackControllerHeavens(t, green, "blue", upstream.url)
	trackControllerHeavens(t, blue, "green", upstream.url)

	// The node lifecycle controllers see nodes through merges, not their
	// leases (ephemeral, each heaven's own): they must not time them out.
	blueKCM := green.RunKubeControllerManager(t, "blue-kcm", "--node-monitor-grace-period=10m")
	green.RunKubeScheduler(t, "blue-sched")
	blue.RunKubeControllerManager(t, "green-kcm", "--node-monitor-grace-period=10m")
	blue.RunKubeScheduler(t, "green-sched")
	for _, c := range []struct {
		hs   *framework.HeavenServer
		name string
	}{{blue, "blue"}, {green, "green"}} {
		c.hs.RunKwok(t, c.name)
		createKwokNodes(t, c.hs.Kube(c.name), 1)
		c.hs.Kubectl(t, c.name, "", "create", "deployment", "web", "--image=nginx", "--replicas=2")
	}
	waitWebRunning(t, "blue", blue.Kube("blue"), 2)
	waitWebRunning(t, "green", green.Kube("green"), 2)

	// Blue's ReplicaSet was made on server green (the only
	// kube-controller-manager of blue works there), in a commit of its
	// blue-kcm, and reached server blue through the upstream branch.
	added := func(git func(...string) string) string {
		return strings.TrimSpace(git("log", "--no-merges", "--diff-filter=A", "--format=%H", "blue-kcm", "--", "apps/replicasets/default"))
	}
	want := added(func(args ...string) string {
		return framework.Git(t, append([]string{"--git-dir", upstream.repo}, args...)...)
	})
	require.NotEmpty(t, want, "the upstream branch blue-kcm holds the commit that created the ReplicaSet")
	assert.Equal(t, want, added(func(args ...string) string { return green.Git(t, args...) }), "server green's blue-kcm")
	assert.Equal(t, want, added(func(args ...string) string { return blue.Git(t, args...) }), "server blue's blue-kcm")

	// Moving blue's kube-controller-manager home: stopped on server green,
	// started against server blue's blue-kcm, the same upstream branch.
	require.NoError(t, blueKCM.Stop())
	blue.RunKubeControllerManager(t, "blue-kcm", "--node-monitor-grace-period=10m")
	blue.Kubectl(t, "blue", "", "scale", "deployment", "web", "--replicas=3")
	waitWebRunning(t, "blue after the move", blue.Kube("blue"), 3)
	waitWebRunning(t, "green, unmoved", green.Kube("green"), 2)
}

// trackControllerHeavens declares in hs heavens tracking the upstream
// branches of cluster name's controller heavens: clones of them.
func trackControllerHeavens(t *testing.T, hs *framework.HeavenServer, name, url string) {
	t.Helper()
	for _, h := range []string{name + "-kcm", name + "-sched"} {
		hs.Kubectl(t, server.RootHeaven, fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":%q},`+
			`"spec":{"type":"kubernetes","remote":{"url":%q,"interval":"1s"}}}`, h, url), "apply", "-f", "-")
		waitRemoteSynced(t, hs, h, "a clone of the upstream branch")
	}
}

// waitWebRunning waits until Deployment web of kube has n pods, all
// Running.
func waitWebRunning(t *testing.T, what string, kube kubernetes.Interface, n int) {
	t.Helper()
	selector := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "web"}).String()}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := kube.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		require.Len(c, pods.Items, n, "pods")
		for _, p := range pods.Items {
			assert.Equal(c, corev1.PodRunning, p.Status.Phase, "pod %s on %q", p.Name, p.Spec.NodeName)
		}
	}, controlPlaneTimeout, syncTick, "%s: %d pods of web running", what, n)
}
