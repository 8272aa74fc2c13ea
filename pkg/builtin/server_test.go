package builtin_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/metadata"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	kubeinformers "k8s.io/client-go/informers"

	"github.com/heaven-dev/heaven/pkg/controllers/namespace"
)

// TestServeBuiltinTypes drives the served types with the typed clientset, in
// order: each step builds on the objects of the ones before.
func TestServeBuiltinTypes(t *testing.T) {
	cfg := startServer(t, false)
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()
	const ns = "team"

	t.Run("namespace create adds the kubernetes finalizer", func(t *testing.T) {
		got, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, []corev1.FinalizerName{corev1.FinalizerKubernetes}, got.Spec.Finalizers)
		assert.Equal(t, corev1.NamespaceActive, got.Status.Phase)
		assert.Equal(t, ns, got.Labels["kubernetes.io/metadata.name"])
	})
	t.Run("configmaps", func(t *testing.T) { testConfigMaps(ctx, t, client, ns) })
	t.Run("secrets", func(t *testing.T) { testSecrets(ctx, t, client, ns) })
	t.Run("deployments", func(t *testing.T) { testDeployments(ctx, t, client, ns) })
	t.Run("leases, events and service accounts", func(t *testing.T) { testSmallTypes(ctx, t, client, ns) })
	t.Run("namespace deletion", func(t *testing.T) { testNamespaceDeletion(ctx, t, cfg, client, ns) })
}

func testConfigMaps(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	cms := client.CoreV1().ConfigMaps(ns)
	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad"}, Data: map[string]string{"no/slash": "x"}}, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "invalid key accepted: %v", err)

	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"a": "1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, cm.ManagedFields, "field manager did not record the create")
	cm.Data["b"] = "2"
	cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = cms.Patch(ctx, "app", types.MergePatchType, []byte(`{"data":{"c":"3"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = cms.Patch(ctx, "app", types.StrategicMergePatchType, []byte(`{"data":{"d":"4"}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	_, err = cms.Apply(ctx, applycorev1.ConfigMap("app", ns).WithData(map[string]string{"e": "5"}), metav1.ApplyOptions{FieldManager: "test", Force: true})
	require.NoError(t, err)

	got, err := cms.Get(ctx, "app", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}, got.Data)
	list, err := cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=app"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.True(t, apierrors.IsConflict(err), "stale update accepted: %v", err)
}

func testSecrets(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	secrets := client.CoreV1().Secrets(ns)
	s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, StringData: map[string]string{"user": "me"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.SecretTypeOpaque, s.Type)
	assert.Equal(t, map[string][]byte{"user": []byte("me")}, s.Data)
	assert.Empty(t, s.StringData)

	list, err := secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=Opaque"})
	require.NoError(t, err)
	assert.Len(t, list.Items, 1)
	list, err = secrets.List(ctx, metav1.ListOptions{FieldSelector: "type=kubernetes.io/tls"})
	require.NoError(t, err)
	assert.Empty(t, list.Items)
}

func testDeployments(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	deployments := client.AppsV1().Deployments(ns)
	d, err := deployments.Create(ctx, newDeployment("web"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), *d.Spec.Replicas)
	assert.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
	assert.Equal(t, int64(1), d.Generation)

	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1, ObservedGeneration: 1}
	d.Spec.Replicas = ptr.To[int32](5)
	d, err = deployments.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), d.Status.ReadyReplicas, "status update lost")
	assert.Equal(t, int32(1), *d.Spec.Replicas, "status update changed spec")
	assert.Equal(t, int64(1), d.Generation)

	scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "app=web", scale.Status.Selector)
	scale.Spec.Replicas = 3
	scale, err = deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(3), scale.Spec.Replicas)
	_, err = deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}, "scale")
	require.NoError(t, err)

	d, err = deployments.Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(4), *d.Spec.Replicas)
	assert.Equal(t, int64(3), d.Generation, "each spec change bumps the generation")
	assert.Equal(t, int32(1), d.Status.Replicas, "main resource kept the status")

	bad := newDeployment("bad")
	bad.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
	_, err = deployments.Create(ctx, bad, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "selector not matching template accepted: %v", err)
}

func testSmallTypes(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) {
	_, err := client.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "leader"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](15)},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = client.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "web"},
		Reason:         "Scaled", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	events, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=Scaled"})
	require.NoError(t, err)
	assert.Len(t, events.Items, 1)
	_, err = client.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web.2"},
		EventTime:  metav1.NewMicroTime(time.Now()),
		Regarding:  corev1.ObjectReference{Kind: "Deployment", Namespace: ns, Name: "web"},
		Reason:     "Scaled", Action: "Scale", Type: corev1.EventTypeNormal,
		ReportingController: "test/controller", ReportingInstance: "test-1",
	}, metav1.CreateOptions{})
	require.NoError(t, err)
}

func testNamespaceDeletion(ctx context.Context, t *testing.T, cfg *rest.Config, client kubernetes.Interface, ns string) {
	_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	got, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err, "namespace with finalizers deleted at once")
	assert.Equal(t, corev1.NamespaceTerminating, got.Status.Phase)
	assert.NotNil(t, got.DeletionTimestamp)
	cms, err := client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.NotEmpty(t, cms.Items, "content deleted before the controller ran")

	runCtx, cancel := context.WithCancel(ctx)
	informers := kubeinformers.NewSharedInformerFactory(client, 0)
	t.Cleanup(func() { cancel(); informers.Shutdown() })
	namespace.Run(runCtx, client, metadata.NewForConfigOrDie(cfg), informers.Core().V1().Namespaces())
	informers.Start(runCtx.Done())

	// The controller deletes the held configmap but must wait for its finalizer.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		held, err := client.CoreV1().ConfigMaps(ns).Get(ctx, "held", metav1.GetOptions{})
		return err == nil && held.DeletionTimestamp != nil, err
	})
	require.NoError(t, err, "held configmap not deleted")
	_, err = client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err, "namespace finalized while content remained")
	_, err = client.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	require.NoError(t, err)

	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "namespace not removed")
	cms, err = client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, cms.Items)
}

func newDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}
