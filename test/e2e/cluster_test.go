package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

const (
	// reconcileTimeout bounds how long the controllers of a cluster may
	// take to act on an object.
	reconcileTimeout = 2 * time.Minute
	// reconcileTick is how often the tests look.
	reconcileTick = 100 * time.Millisecond
)

// Two clusters started at once each run their own controllers on their own
// storage, and the real kubectl works against them.
func TestClustersReconcileIndependently(t *testing.T) {
	clusters := framework.StartClusters(t, "east", "west")

	t.Run("deployment", func(t *testing.T) {
		for _, c := range clusters {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				requireDeploymentReconciled(t, c.Client(), namespaceOf(c))
			})
		}
	})

	for i, c := range clusters {
		other := clusters[1-i]
		_, err := c.Client().CoreV1().Namespaces().Get(t.Context(), namespaceOf(other), metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "namespace %s of cluster %s in cluster %s: %v", namespaceOf(other), other.Name, c.Name, err)
	}

	out := clusters[0].Kubectl(t, "get", "deployments", "-A")
	assert.Regexp(t, namespaceOf(clusters[0])+`\s+web\s`, out)
	assert.NotContains(t, out, namespaceOf(clusters[1]))

	require.NoError(t, clusters[1].Stop())
	_, err := clusters[1].Client().Discovery().ServerVersion()
	assert.Error(t, err, "cluster %s answers after Stop", clusters[1].Name)
}

func namespaceOf(c *framework.Cluster) string { return "e2e-" + c.Name }

// requireDeploymentReconciled creates namespace ns with a Deployment of one
// replica and waits until kube-controller-manager has made its ReplicaSet and
// Pod. The Pod stays Pending when the cluster has no nodes.
func requireDeploymentReconciled(t *testing.T, client kubernetes.Interface, ns string) {
	ctx := t.Context()
	_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// The service account controller gives every namespace a default
	// ServiceAccount; Pods cannot be created before it exists.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		assert.NoError(c, err)
	}, reconcileTimeout, reconcileTick, "the default ServiceAccount")

	labels := map[string]string{"app": "web"}
	_, err = client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "web",
					Image: "registry.k8s.io/pause:3.10",
				}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(c, err)
		for _, rs := range rss.Items {
			if owner := metav1.GetControllerOf(&rs); owner != nil && owner.Kind == "Deployment" && owner.Name == "web" {
				return
			}
		}
		c.Errorf("%d ReplicaSets, none controlled by Deployment web", len(rss.Items))
	}, reconcileTimeout, reconcileTick, "a ReplicaSet of Deployment web")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		require.NoError(c, err)
		for _, pod := range pods.Items {
			if owner := metav1.GetControllerOf(&pod); owner != nil && owner.Kind == "ReplicaSet" {
				return
			}
		}
		c.Errorf("%d Pods, none controlled by a ReplicaSet", len(pods.Items))
	}, reconcileTimeout, reconcileTick, "a Pod of Deployment web")
}
