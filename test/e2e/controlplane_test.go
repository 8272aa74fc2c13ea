package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// controlPlaneTimeout bounds each wait for kube-controller-manager and
// kube-scheduler: they start, list every resource and then act.
const controlPlaneTimeout = 2 * time.Minute

// TestKubeControllersOnAKubernetesHeaven runs the real
// kube-controller-manager and kube-scheduler against a heaven of type
// kubernetes, as against a kube-apiserver: a Deployment becomes a
// ReplicaSet and Pods, the Pods are bound to the nodes the test registers,
// scaling down deletes Pods, and every step is a commit of the heaven's
// branch.
func TestKubeControllersOnAKubernetesHeaven(t *testing.T) {
	hs := framework.StartHeavenServer(t, nil)
	const h = "cluster"
	hs.Kubectl(t, server.RootHeaven, `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"cluster"},"spec":{"type":"kubernetes"}}`, "create", "-f", "-")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		u, err := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.HeavensResource).Get(t.Context(), h, metav1.GetOptions{})
		require.NoError(c, err)
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		assert.Equal(c, string(v1alpha1.HeavenPhaseReady), phase)
	}, controlPlaneTimeout, syncTick, "heaven %s ready", h)
	kube := hs.Kube(h)

	// Nodes as a kubelet registers them, kept alive by their leases.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for _, name := range []string{"node-a", "node-b"} {
		registerNode(t, kube, name)
		go heartbeat(ctx, kube, name)
	}

	hs.RunKubeControllerManager(t, h)
	hs.RunKubeScheduler(t, h)

	hs.Kubectl(t, h, "", "create", "deployment", "web", "--image=nginx", "--replicas=3")
	selector := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{"app": "web"}).String()}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		rs, err := kube.AppsV1().ReplicaSets("default").List(t.Context(), selector)
		require.NoError(c, err)
		require.Len(c, rs.Items, 1, "the Deployment's ReplicaSet")
		pods, err := kube.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		require.Len(c, pods.Items, 3, "the ReplicaSet's Pods")
		for _, p := range pods.Items {
			assert.Contains(c, []string{"node-a", "node-b"}, p.Spec.NodeName, "pod %s bound by the scheduler", p.Name)
			assert.Equal(c, rs.Items[0].Name, p.OwnerReferences[0].Name)
		}
	}, controlPlaneTimeout, syncTick)

	// The story is in git: the controllers' writes are commits.
	log := hs.Git(t, "log", "--format=%B", h)
	for _, want := range []string{"create apps/deployments/default/web", "create apps/replicasets/default/web-", "create core/pods/default/web-"} {
		assert.Contains(t, log, want)
	}
	assert.Equal(t, 3, strings.Count(hs.Git(t, "ls-tree", "-r", "--name-only", h, "core/pods/default/"), "\n"), "a file per pod")

	// Scaling down: the ReplicaSet controller deletes two Pods (they stay
	// terminating: no kubelet confirms).
	hs.Kubectl(t, h, "", "scale", "deployment", "web", "--replicas=1")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := kube.CoreV1().Pods("default").List(t.Context(), selector)
		require.NoError(c, err)
		live := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				live++
			}
		}
		assert.Equal(c, 1, live, "pods not being deleted")
	}, controlPlaneTimeout, syncTick)

	// The ServiceAccount controller made the default ServiceAccounts,
	// which Pods need.
	_, err := kube.CoreV1().ServiceAccounts("kube-system").Get(t.Context(), "default", metav1.GetOptions{})
	require.NoError(t, err)
}

// registerNode creates a Ready node with room for pods, as a kubelet does.
func registerNode(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	node, err := kube.CoreV1().Nodes().Create(t.Context(), &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelOSStable: "linux"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	node.Status = corev1.NodeStatus{
		Capacity:    room,
		Allocatable: room,
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}},
	}
	_, err = kube.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// heartbeat renews node name's lease in kube-node-lease until ctx ends, as
// a kubelet does, so that the node lifecycle controller keeps it Ready.
func heartbeat(ctx context.Context, kube kubernetes.Interface, name string) {
	leases := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		now := metav1.NowMicro()
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, _ = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
			}, metav1.CreateOptions{})
			return
		}
		if err == nil {
			lease.Spec.RenewTime = &now
			_, _ = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
	}, 5*time.Second)
}
