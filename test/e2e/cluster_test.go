package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// reconcileTimeout bounds how long the controllers of a cluster may take to
// act on an object.
const reconcileTimeout = 2 * time.Minute

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
	eventually(t, "the default ServiceAccount", func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err
	})

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

	eventually(t, "a ReplicaSet of Deployment web", func(ctx context.Context) error {
		rss, err := client.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, rs := range rss.Items {
			if owner := metav1.GetControllerOf(&rs); owner != nil && owner.Kind == "Deployment" && owner.Name == "web" {
				return nil
			}
		}
		return fmt.Errorf("%d ReplicaSets, none controlled by Deployment web", len(rss.Items))
	})
	eventually(t, "a Pod of Deployment web", func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return err
		}
		for _, pod := range pods.Items {
			if owner := metav1.GetControllerOf(&pod); owner != nil && owner.Kind == "ReplicaSet" {
				return nil
			}
		}
		return fmt.Errorf("%d Pods, none controlled by a ReplicaSet", len(pods.Items))
	})
}

// eventually polls check until it succeeds, failing the test with check's
// last error after reconcileTimeout.
func eventually(t *testing.T, what string, check func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, reconcileTimeout, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	require.NoError(t, err, "waiting for %s: %v", what, last)
}
