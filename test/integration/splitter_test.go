package integration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/splitter"
)

// TestDeploymentSplitter: a Deployment labelled heaven.dev/split in a heaven
// with SyncTargets east and west becomes web-east and web-west, labelled
// for their targets, with 3 and 2 of its 5 replicas; their status (as
// syncers bring it up) is summed into it; scaling, naming targets and
// deleting follow.
func TestDeploymentSplitter(t *testing.T) {
	ts := startServer(t, "", nil)
	ctx := t.Context()
	for _, name := range []string{"east", "west"} {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.SyncTarget{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       v1alpha1.SyncTargetSpec{Heaven: "split"},
		})
		require.NoError(t, err)
		eventually(t, time.Minute, "SyncTarget "+name, func() (bool, error) {
			_, err := ts.dynamic("root").Resource(v1alpha1.SyncTargetsResource).Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), err
		})
	}
	deployments := ts.kube("split").AppsV1().Deployments("default")
	_, err := deployments.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{splitter.SplitLabel: "true", "app": "web"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](5),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	replicas := func(name string) int32 {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return *d.Spec.Replicas
	}
	eventually(t, time.Minute, "3 + 2 replicas", func() (bool, error) {
		return replicas("web-east") == 3 && replicas("web-west") == 2, nil
	})
	east, err := deployments.Get(ctx, "web-east", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "east", east.Labels[v1alpha1.ClusterLabel], "synced to its target")
	require.NotContains(t, east.Labels, splitter.SplitLabel)

	// The syncers bring the clusters' status up.
	for name, ready := range map[string]int32{"web-east": 3, "web-west": 1} {
		d, err := deployments.Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas,
			UpdatedReplicas: *d.Spec.Replicas, ReadyReplicas: ready, AvailableReplicas: ready}
		_, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	eventually(t, time.Minute, "status summed into web", func() (bool, error) {
		d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.Replicas == 5 && d.Status.ReadyReplicas == 4 && d.Status.ObservedGeneration == d.Generation, err
	})

	// Scaled to 4: 2 + 2. Then only east: web-west goes.
	d, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	d.Spec.Replicas = ptr.To[int32](4)
	_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, time.Minute, "2 + 2 replicas", func() (bool, error) {
		return replicas("web-east") == 2 && replicas("web-west") == 2, nil
	})
	d, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	d.Annotations = map[string]string{splitter.TargetsAnnotation: "east"}
	_, err = deployments.Update(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, time.Minute, "east alone, with every replica", func() (bool, error) {
		return replicas("web-east") == 4 && replicas("web-west") == -1, nil
	})

	// Deleting web deletes its children first.
	require.NoError(t, deployments.Delete(ctx, "web", metav1.DeleteOptions{}))
	eventually(t, time.Minute, "web and its children gone", func() (bool, error) {
		list, err := deployments.List(context.Background(), metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, err
	})
}
