package e2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

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
	hs := framework.StartHeavenServer(t, nil)
	declare := func(yaml string) {
		t.Helper()
		hs.Kubectl(t, server.RootHeaven, yaml, "apply", "-f", "-")
	}
	declare(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"main"},"spec":{"type":"kubernetes"}}`)
	waitHeaven(t, hs, "main")
	for _, h := range []string{"kcm", "sched"} {
		declare(fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":%q},"spec":{"type":"kubernetes","fork":{"heaven":"main"}}}`, h))
		waitHeaven(t, hs, h)
		// Both directions, without a conflict policy: the built-in rules
		// (status, deletions) are all a cluster of Kubernetes' own
		// controllers needs; any other conflict would block and be
		// reported.
		for _, m := range [][2]string{{"main", h}, {h, "main"}} {
			declare(fmt.Sprintf(`{"apiVersion":"heaven.dev/v1alpha1","kind":"AutomatedMerge","metadata":{"name":"%s-to-%s"},`+
				`"spec":{"sources":[%q],"target":%q}}`, m[0], m[1], m[0], m[1]))
		}
	}

	// The node lifecycle controller sees nodes through merges, not their
	// leases (ephemeral, each heaven's own): it must not time them out.
	hs.RunKubeControllerManager(t, "kcm", "--node-monitor-grace-period=10m")
	hs.RunKubeScheduler(t, "sched")
	hs.RunKwok(t, "main")
	main := hs.Kube("main")
	_, err := main.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1",
		Annotations: map[string]string{framework.KwokNodeAnnotation: "fake"},
		Labels:      map[string]string{corev1.LabelHostname: "node-1", corev1.LabelOSStable: "linux"}}}, metav1.CreateOptions{})
	require.NoError(t, err)

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
