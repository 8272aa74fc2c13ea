package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestHeadlessCluster is a Kubernetes cluster without central state: the
// real kube-controller-manager works only in heaven kcm, the real
// kube-scheduler only in heaven sched, users and nodes (kwok's, which run
// their pods) only in main; the three kubernetes heavens are forked from
// main and kept in step by AutomatedMerges in both directions, with no
// conflict policy of their own. A Deployment created in main ends with its
// pods running in main, every step a commit of the heaven that made it,
// merged into the others; scaling down converges the same way.
func TestHeadlessCluster(t *testing.T) {
	hs := startHeadlessCluster(t, 1)
	main := hs.Kube("main")

	hs.Kubectl(t, "main", "", "create", "deployment", "web", "--image=nginx", "--replicas=3")
	selector := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "web"}).String()}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := main.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		require.Len(c, pods.Items, 3, "pods made by kcm, seen in main")
		for _, p := range pods.Items {
			assert.Equal(c, "node-1", p.Spec.NodeName, "pod %s bound in sched, seen in main", p.Name)
		}
	}, controlPlaneTimeout, syncTick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := main.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		for _, p := range pods.Items {
			assert.Equal(c, corev1.PodRunning, p.Status.Phase, "pod %s run by kwok", p.Name)
		}
	}, controlPlaneTimeout, syncTick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := main.AppsV1().Deployments("default").Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(3), d.Status.AvailableReplicas, "available, as kcm counted in its heaven")
	}, controlPlaneTimeout, syncTick)

	// The story, in main's history: merges from both controllers' heavens.
	log := hs.Git(t, "log", "--format=%s", "main")
	assert.Contains(t, log, "merge heaven kcm")
	assert.Contains(t, log, "merge heaven sched")
	kcmLog := hs.Git(t, "log", "--format=%B", "kcm")
	assert.Contains(t, kcmLog, "create core/pods/default/web-", "pods are kcm's commits")

	// Scaling down: kcm deletes two pods in its heaven; kwok in main sees
	// them terminating and removes them.
	hs.Kubectl(t, "main", "", "scale", "deployment", "web", "--replicas=1")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := main.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		assert.Len(c, pods.Items, 1, "pods in main")
	}, controlPlaneTimeout, syncTick)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := hs.Kube("kcm").CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		assert.Len(c, pods.Items, 1, "the deletions merged back into kcm")
	}, controlPlaneTimeout, syncTick)

	// A rolling update (a new image) goes the same way: kcm's new
	// ReplicaSet and pods, sched's bindings, kwok's running pods.
	hs.Kubectl(t, "main", "", "set", "image", "deployment/web", "nginx=nginx:1.27")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := main.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		require.Len(c, pods.Items, 1, "pods in main")
		p := pods.Items[0]
		assert.Equal(c, "nginx:1.27", p.Spec.Containers[0].Image)
		assert.Equal(c, corev1.PodRunning, p.Status.Phase)
	}, controlPlaneTimeout, syncTick, "the new image rolled out")

	// With the merges from main suspended, kcm's heaven is its whole world:
	// a scale-up in main waits there, and happens once they resume.
	for _, m := range []string{"main-to-kcm", "main-to-sched"} {
		hs.Kubectl(t, server.RootHeaven, "", "patch", "automatedmerge", m, "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	}
	hs.Kubectl(t, "main", "", "scale", "deployment", "web", "--replicas=2")
	kcmDeployments := hs.Kube("kcm").AppsV1().Deployments("default")
	require.Never(t, func() bool {
		d, err := kcmDeployments.Get(t.Context(), "web", metav1.GetOptions{})
		return err == nil && *d.Spec.Replicas == 2
	}, 3*time.Second, syncTick, "kcm saw the scale-up while merges were suspended")
	for _, m := range []string{"main-to-kcm", "main-to-sched"} {
		hs.Kubectl(t, server.RootHeaven, "", "patch", "automatedmerge", m, "--type=merge", "-p", `{"spec":{"suspend":false}}`)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := main.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
		}
		assert.Equal(c, 2, running, "running pods in main after the merges resumed")
	}, controlPlaneTimeout, syncTick)

	// Deleting the Deployment: kcm's garbage collector deletes its
	// ReplicaSets and pods in kcm; kwok in main sees the pods terminating and
	// removes them. Meanwhile kcm's last status reports on the Deployment
	// meet its deletion in the merges (status against delete: deleted).
	hs.Kubectl(t, "main", "", "delete", "deployment", "web", "--cascade=foreground", "--wait=false")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := main.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		assert.Empty(c, pods.Items, "pods in main after the Deployment was deleted")
		_, err = main.AppsV1().Deployments("default").Get(t.Context(), "web", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "the Deployment is gone from main: %v", err)
	}, controlPlaneTimeout, syncTick)

	// No merge was blocked; every conflict resolved as the policy says.
	for _, m := range []string{"main-to-kcm", "kcm-to-main", "main-to-sched", "sched-to-main"} {
		u, err := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.AutomatedMergesResource).Get(t.Context(), m, metav1.GetOptions{})
		require.NoError(t, err)
		conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, cond := range conditions {
			cm := cond.(map[string]any)
			if cm["type"] == "Ready" {
				assert.Equal(t, "True", cm["status"], "%s Ready: %v", m, cm["message"])
			}
		}
	}
}

// startHeadlessCluster starts heaven-server with a headless cluster: heaven
// main with kwok and nodes kwok runs (node-1…), kcm with the real
// kube-controller-manager, sched with the real kube-scheduler, each forked
// from main and merged with it both ways.
func startHeadlessCluster(t *testing.T, nodes int) *framework.HeavenServer {
	t.Helper()
	hs := framework.StartHeavenServer(t, nil)
	declareHeadlessCluster(t, hs, headlessHeavens{main: "main", kcm: "kcm", sched: "sched"}, "")

	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the merges say, and where the Deployment is in each heaven.
		ctx := context.Background()
		if list, err := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.AutomatedMergesResource).List(ctx, metav1.ListOptions{}); err == nil {
			for _, am := range list.Items {
				status, _, _ := unstructured.NestedMap(am.Object, "status")
				t.Logf("AutomatedMerge %s: %v", am.GetName(), status)
			}
		}
		for _, h := range []string{"main", "kcm", "sched"} {
			if d, err := hs.Kube(h).AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
				t.Logf("%s: web spec.replicas=%d status=%+v", h, *d.Spec.Replicas, d.Status)
			}
		}
	})

	// The node lifecycle controller sees nodes through merges, not their
	// leases (ephemeral, each heaven's own): it must not time them out.
	hs.RunKubeControllerManager(t, "kcm", "--node-monitor-grace-period=10m")
	hs.RunKubeScheduler(t, "sched")
	hs.RunKwok(t, "main")
	createKwokNodes(t, hs.Kube("main"), nodes)
	return hs

}

// headlessHeavens names the heavens of a headless cluster: main, where
// users and nodes are, and the controllers' kcm and sched.
type headlessHeavens struct{ main, kcm, sched string }

// declareHeadlessCluster declares the heavens of a headless cluster in hs:
// kcm and sched forked from main and merged with it both ways. With a
// remote url, kcm and sched also track their branches of it (interval 1s),
// and are synced with it when this returns.
func declareHeadlessCluster(t *testing.T, hs *framework.HeavenServer, h headlessHeavens, url string) {
	t.Helper()
	declare := func(yaml string) {
		t.Helper()
		hs.Kubectl(t, server.RootHeaven, yaml, "apply", "-f", "-")
	}
	declare(fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":%q},"spec":{"type":"kubernetes"}}`, h.main))
	waitHeaven(t, hs, h.main)
	for _, ctrl := range []string{h.kcm, h.sched} {
		if url == "" {
			declare(fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":%q},`+
				`"spec":{"type":"kubernetes","fork":{"heaven":%q}}}`, ctrl, h.main))
			waitHeaven(t, hs, ctrl)
		} else {
			declare(fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":%q},`+
				`"spec":{"type":"kubernetes","fork":{"heaven":%q},"remote":{"url":%q,"interval":"1s"}}}`, ctrl, h.main, url))
			waitRemoteSynced(t, hs, ctrl, "pushed to the upstream branch")
		}
		// Both directions, without a conflict policy: the built-in rules
		// (status, deletions) are all a cluster of Kubernetes' own
		// controllers needs; any other conflict would block and be
		// reported.
		for _, m := range [][2]string{{h.main, ctrl}, {ctrl, h.main}} {
			declare(fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"AutomatedMerge","metadata":{"name":"%s-to-%s"},`+
				`"spec":{"sources":[%q],"target":%q}}`, m[0], m[1], m[0], m[1]))
		}
	}
}

// createKwokNodes registers nodes node-1… for kwok to run.
func createKwokNodes(t *testing.T, kube kubernetes.Interface, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node-%d", i)
		_, err := kube.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{framework.KwokNodeAnnotation: "fake"},
			Labels:      map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// waitHeaven waits until Heaven name in root is Ready.
func waitHeaven(t *testing.T, hs *framework.HeavenServer, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		u, err := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.HeavensResource).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		assert.Equal(c, string(v1alpha1.HeavenPhaseReady), phase)
	}, controlPlaneTimeout, syncTick, "heaven %s ready", name)
}
