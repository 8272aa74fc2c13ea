package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/splitter"
	"github.com/heaven-dev/heaven/pkg/syncer"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestDeploymentSplitterAcrossClusters is the kcp demo's splitter with two
// real clusters: a Deployment of 5 replicas labelled for splitting, in a
// heaven with SyncTargets east and west (each with its syncer), becomes
// 3 + 2 replicas in the clusters; once their pods are ready (the test plays
// the kubelet: the clusters have no nodes), the clusters' status comes up
// through the syncers and is summed into the original Deployment.
func TestDeploymentSplitterAcrossClusters(t *testing.T) {
	clusters := framework.StartClusters(t, "east", "west")
	hs := framework.StartHeavenServer(t, nil)
	const heaven, ns = "shop", "demo"

	envs := map[string]*syncEnv{}
	for i, c := range clusters {
		e := &syncEnv{t: t, hs: hs, phys: c, heaven: heaven, target: c.Name, ns: ns,
			up: hs.Kube(heaven), upDyn: hs.Dynamic(heaven), down: c.Client(), downDyn: dynamic.NewForConfigOrDie(c.RESTConfig()),
			downNS: syncer.DownstreamNamespace(heaven, c.Name, ns)}
		if i == 0 {
			e.setUpHeaven(nil)
		} else {
			createSyncTarget(t, hs, &v1alpha1.SyncTarget{ObjectMeta: metav1.ObjectMeta{Name: c.Name}, Spec: v1alpha1.SyncTargetSpec{Heaven: heaven}})
		}
		e.startSyncer("deployments.apps")
		envs[c.Name] = e
	}

	labels := map[string]string{"app": "web"}
	_, err := hs.Kube(heaven).AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{splitter.SplitLabel: "true", "app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](5),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// 3 + 2 replicas, one Deployment in each cluster.
	want := map[string]int32{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		total := int32(0)
		for name, e := range envs {
			d, err := e.down.AppsV1().Deployments(e.downNS).Get(t.Context(), "web-"+name, metav1.GetOptions{})
			require.NoError(c, err, "web-%s in cluster %s", name, name)
			want[name] = *d.Spec.Replicas
			total += *d.Spec.Replicas
		}
		assert.Equal(c, int32(5), total)
		assert.ElementsMatch(c, []int32{3, 2}, []int32{want["east"], want["west"]})
	}, syncTimeout, syncTick, "the split deployments in the clusters")

	// Each cluster's pods become ready, as a kubelet would make them.
	for name, e := range envs {
		makePodsReady(t, e.down, e.downNS, want[name])
	}

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d, err := hs.Kube(heaven).AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, int32(5), d.Status.Replicas, "replicas")
		assert.Equal(c, int32(5), d.Status.ReadyReplicas, "ready replicas, summed")
	}, syncTimeout, syncTick, "the clusters' status summed into web")
}

// makePodsReady marks the pods of namespace ns Running and Ready until n of
// them are, as a kubelet reports them.
func makePodsReady(t *testing.T, client kubernetes.Interface, ns string, n int32) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pods, err := client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(c, err)
		ready := int32(0)
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp != nil {
				continue
			}
			if p.Status.Phase != corev1.PodRunning {
				now := metav1.NewTime(time.Now().Add(-time.Minute))
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "web", Ready: true, Image: "nginx", ImageID: "nginx",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
				p.Status.StartTime = &now
				if _, err := client.CoreV1().Pods(ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
					continue
				}
			}
			ready++
		}
		assert.Equal(c, n, ready, "ready pods in %s", ns)
	}, syncTimeout, syncTick, "%d ready pods in %s", n, ns)
}
