package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/syncer"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// outageFor is how long a side stays down in the outage tests: long enough
// for the syncer's retries to fail many times and back off.
const outageFor = 15 * time.Second

// TestSyncerPhysicalAPIServerOutage stops the physical cluster's
// kube-apiserver (its etcd and kube-controller-manager go on) while objects
// are created, updated, relabelled and deleted in the heaven. Meanwhile no
// deletion may complete; once the cluster is back the syncer converges:
// every selected object exists downstream once with the heaven's data, the
// others are gone, finalizers are released and status flows up.
func TestSyncerPhysicalAPIServerOutage(t *testing.T) {
	e := newOutageEnv(t, "out-a", "configmaps,deployments.apps")
	for _, name := range []string{"keep", "update-me", "unlabel-me", "relabel-me", "delete-me"} {
		e.createConfigMap(name, e.target, map[string]string{"v": "1"})
	}
	e.createConfigMap("label-me", "", map[string]string{"v": "1"})
	e.createDeployment("web", 1)
	e.waitDownstreamConfigMaps("keep", "update-me", "unlabel-me", "relabel-me", "delete-me")
	e.waitDeploymentStatus("web", 1)

	e.phys.APIServerOutage(t, func() {
		began := time.Now()
		for i := range 10 {
			e.createConfigMap(fmt.Sprintf("new-%d", i), e.target, map[string]string{"v": "1"})
		}
		e.updateConfigMap("update-me", func(cm *corev1.ConfigMap) { cm.Data["v"] = "2" })
		e.updateConfigMap("unlabel-me", func(cm *corev1.ConfigMap) { delete(cm.Labels, v1alpha1.ClusterLabel) })
		e.updateConfigMap("relabel-me", func(cm *corev1.ConfigMap) { cm.Labels[v1alpha1.ClusterLabel] = "elsewhere" })
		e.updateConfigMap("label-me", func(cm *corev1.ConfigMap) { cm.Labels[v1alpha1.ClusterLabel] = e.target })
		e.deleteConfigMap("delete-me")
		// Created and deleted while the cluster is away: the finalizer
		// may hold it until the syncer knows no copy exists.
		e.createConfigMap("short-lived", e.target, map[string]string{"v": "1"})
		e.deleteConfigMap("short-lived")
		e.updateDeployment("web", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) })
		time.Sleep(outageFor - time.Since(began)) // the outage itself: nothing to wait for

		// No deletion may complete while the copies cannot be deleted.
		cm, err := e.up.CoreV1().ConfigMaps(e.ns).Get(t.Context(), "delete-me", metav1.GetOptions{})
		require.NoError(t, err, "delete-me released while the cluster was down")
		assert.NotNil(t, cm.DeletionTimestamp)
		assert.Equal(t, []string{v1alpha1.SyncerFinalizer(e.target)}, cm.Finalizers)
		for _, name := range []string{"unlabel-me", "relabel-me"} {
			cm, err := e.up.CoreV1().ConfigMaps(e.ns).Get(t.Context(), name, metav1.GetOptions{})
			require.NoError(t, err)
			assert.Contains(t, cm.Finalizers, v1alpha1.SyncerFinalizer(e.target), "%s released while the cluster was down", name)
		}
	})

	back := time.Now()
	want := []string{"keep", "label-me", "update-me"}
	for i := range 10 {
		want = append(want, fmt.Sprintf("new-%d", i))
	}
	e.waitConverged(want, map[string]string{"update-me": "2"})
	e.waitReleased("unlabel-me", "relabel-me", "label-me")
	e.waitUpstreamGone("delete-me", "short-lived")
	t.Logf("objects converged %v after kube-apiserver returned", time.Since(back).Round(time.Millisecond))
	// kube-controller-manager reconnects with a backoff of its own: the
	// status takes longer to exist downstream than the syncer to bring it up.
	e.waitDownstreamDeploymentStatus("web", 2)
	t.Logf("deployment status downstream %v after kube-apiserver returned", time.Since(back).Round(time.Millisecond))
	e.waitDeploymentStatus("web", 2)
	t.Logf("deployment status in the heaven %v after kube-apiserver returned", time.Since(back).Round(time.Millisecond))
	e.requireOneDownstreamNamespace()
}

// TestSyncerHeavenServerOutage stops heaven-server (the syncer goes on
// running) while the physical cluster changes: status written to the
// copies, the copy of an object being deleted goes away, a copy is deleted
// by someone else. When heaven-server is back on the same data and port the
// syncer converges: status is up, the deleted object's finalizer released,
// nothing duplicated, and new changes in the heaven sync again.
func TestSyncerHeavenServerOutage(t *testing.T) {
	e := newOutageEnv(t, "out-b", "configmaps,widgets.example.com")
	for _, name := range []string{"keep", "held", "lost-downstream"} {
		e.createConfigMap(name, e.target, map[string]string{"v": "1"})
	}
	for _, name := range []string{"w1", "w2"} {
		e.createWidget(name, 1)
	}
	e.waitDownstreamConfigMaps("keep", "held", "lost-downstream")
	for _, name := range []string{"w1", "w2"} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			_, err := e.downDyn.Resource(widgetsGVR).Namespace(e.downNS).Get(ctx, name, metav1.GetOptions{})
			assert.NoError(c, err)
		}, syncTimeout, syncTick, "widget "+name+" downstream")
	}
	// A finalizer of the cluster holds the copy of "held": its deletion in
	// the heaven waits for it.
	const blocker = "e2e.heaven.dev/block"
	_, err := e.down.CoreV1().ConfigMaps(e.downNS).Patch(t.Context(), "held", types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":["`+blocker+`"]}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	e.deleteConfigMap("held")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		cm, err := e.down.CoreV1().ConfigMaps(e.downNS).Get(ctx, "held", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Truef(c, cm.DeletionTimestamp != nil, "not being deleted")
	}, syncTimeout, syncTick, "held being deleted downstream")

	e.hs.Outage(t, func() {
		began := time.Now()
		for _, name := range []string{"w1", "w2"} {
			e.setDownstreamWidgetPhase(name, "Ready")
		}
		_, err := e.down.CoreV1().ConfigMaps(e.downNS).Patch(t.Context(), "held", types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.NoError(t, e.down.CoreV1().ConfigMaps(e.downNS).Delete(t.Context(), "lost-downstream", metav1.DeleteOptions{}))
		time.Sleep(outageFor - time.Since(began)) // the outage itself: nothing to wait for
	})

	back := time.Now()
	e.waitUpstreamGone("held")
	for _, name := range []string{"w1", "w2"} {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			w, err := e.upDyn.Resource(widgetsGVR).Namespace(e.ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(c, err)
			phase, _, _ := unstructured.NestedString(w.Object, "status", "phase")
			assert.Truef(c, phase == "Ready", "status %v", w.Object["status"])
		}, syncTimeout, syncTick, "widget "+name+" status in the heaven")
	}
	e.createConfigMap("after", e.target, map[string]string{"v": "1"})
	e.waitConverged([]string{"after", "keep", "lost-downstream"}, nil)
	t.Logf("converged %v after heaven-server returned", time.Since(back).Round(time.Millisecond))
	e.requireOneDownstreamNamespace()
	widgets, err := e.downDyn.Resource(widgetsGVR).Namespace("").List(t.Context(), metav1.ListOptions{LabelSelector: e.ownerSelector()})
	require.NoError(t, err)
	var names []string
	for _, w := range widgets.Items {
		names = append(names, w.GetNamespace()+"/"+w.GetName())
	}
	assert.ElementsMatch(t, []string{e.downNS + "/w1", e.downNS + "/w2"}, names, "widgets downstream")
}

// outageEnv is a heaven-server and a physical cluster that the test stops
// and starts again, one heaven with a namespace, and a syncer between them.
type outageEnv struct {
	t                  *testing.T
	hs                 *framework.HeavenServer
	phys               *framework.Cluster
	heaven, target, ns string
	downNS             string
	up, down           kubernetes.Interface
	upDyn, downDyn     dynamic.Interface
}

// newOutageEnv starts a physical cluster (with the widget CRD) and
// heaven-server, creates the SyncTarget target for heaven "outage" and
// starts a syncer for resources.
func newOutageEnv(t *testing.T, target, resources string) *outageEnv {
	phys := framework.StartCluster(t, target)
	hs := framework.StartHeavenServer(t, nil)
	createCRD(t, apiextensionsclient.NewForConfigOrDie(phys.RESTConfig()), widgetCRD())
	const heaven, ns = "outage", "demo"
	e := &outageEnv{t: t, hs: hs, phys: phys, heaven: heaven, target: target, ns: ns,
		downNS: syncer.DownstreamNamespace(heaven, target, ns),
		up:     hs.Kube(heaven), upDyn: hs.Dynamic(heaven),
		down: phys.Client(), downDyn: dynamic.NewForConfigOrDie(phys.RESTConfig()),
	}
	_, err := e.up.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createSyncTarget(t, hs, &v1alpha1.SyncTarget{
		ObjectMeta: metav1.ObjectMeta{Name: target},
		Spec:       v1alpha1.SyncTargetSpec{Heaven: heaven},
	})
	e.startSyncer(resources)
	return e
}

// startSyncer runs the syncer in the test process, as cmd/syncer does,
// until the test ends.
func (e *outageEnv) startSyncer(resources string) {
	t := e.t
	o := syncer.NewOptions()
	o.UpstreamKubeconfig = filepath.Join(t.TempDir(), e.heaven+".kubeconfig")
	require.NoError(t, e.hs.WriteKubeconfig(e.heaven, o.UpstreamKubeconfig))
	o.DownstreamKubeconfig = e.phys.Kubeconfig
	o.SyncTarget = e.target
	o.Resources = strings.Split(resources, ",")
	o.HeartbeatInterval = time.Second
	o.MetricsBindAddress = ""
	require.Empty(t, o.Validate())
	cfg, err := o.Config()
	require.NoError(t, err)
	s, err := cfg.Complete().New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the syncer did not stop within 30s")
		}
	})
}

// createConfigMap creates a configmap in the heaven, labelled for target
// (unlabelled if "").
func (e *outageEnv) createConfigMap(name, target string, data map[string]string) {
	e.t.Helper()
	labels := map[string]string{"app": "outage"}
	if target != "" {
		labels[v1alpha1.ClusterLabel] = target
	}
	_, err := e.up.CoreV1().ConfigMaps(e.ns).Create(e.t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data,
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// updateConfigMap changes a heaven configmap, retrying on conflicts with
// the syncer's writes.
func (e *outageEnv) updateConfigMap(name string, change func(*corev1.ConfigMap)) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		cm, err := e.up.CoreV1().ConfigMaps(e.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		change(cm)
		_, err = e.up.CoreV1().ConfigMaps(e.ns).Update(ctx, cm, metav1.UpdateOptions{})
		assert.NoError(c, err)
	}, syncTimeout, syncTick, "updating configmap "+name)
}

func (e *outageEnv) deleteConfigMap(name string) {
	e.t.Helper()
	require.NoError(e.t, e.up.CoreV1().ConfigMaps(e.ns).Delete(e.t.Context(), name, metav1.DeleteOptions{}))
}

func (e *outageEnv) createDeployment(name string, replicas int32) {
	e.t.Helper()
	labels := map[string]string{"app": name}
	_, err := e.up.AppsV1().Deployments(e.ns).Create(e.t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1alpha1.ClusterLabel: e.target}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func (e *outageEnv) updateDeployment(name string, change func(*appsv1.Deployment)) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		d, err := e.up.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		change(d)
		_, err = e.up.AppsV1().Deployments(e.ns).Update(ctx, d, metav1.UpdateOptions{})
		assert.NoError(c, err)
	}, syncTimeout, syncTick, "updating deployment "+name)
}

func (e *outageEnv) createWidget(name string, size int64) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		// The syncer teaches the heaven the widget type first.
		_, err := e.upDyn.Resource(widgetsGVR).Namespace(e.ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name, "labels": map[string]any{v1alpha1.ClusterLabel: e.target}},
			"spec":     map[string]any{"size": size},
		}}, metav1.CreateOptions{})
		assert.NoError(c, err)
	}, syncTimeout, syncTick, "creating widget "+name)
}

// setDownstreamWidgetPhase writes the status of a widget's copy, as the
// cluster's controller of widgets would.
func (e *outageEnv) setDownstreamWidgetPhase(name, phase string) {
	e.t.Helper()
	client := e.downDyn.Resource(widgetsGVR).Namespace(e.downNS)
	w, err := client.Get(e.t.Context(), name, metav1.GetOptions{})
	require.NoError(e.t, err)
	require.NoError(e.t, unstructured.SetNestedField(w.Object, phase, "status", "phase"))
	_, err = client.UpdateStatus(e.t.Context(), w, metav1.UpdateOptions{})
	require.NoError(e.t, err)
}

// waitDownstreamConfigMaps waits until the configmaps have copies.
func (e *outageEnv) waitDownstreamConfigMaps(names ...string) {
	e.t.Helper()
	for _, name := range names {
		require.EventuallyWithT(e.t, func(c *assert.CollectT) {
			ctx := e.t.Context()
			_, err := e.down.CoreV1().ConfigMaps(e.downNS).Get(ctx, name, metav1.GetOptions{})
			assert.NoError(c, err)
		}, syncTimeout, syncTick, "configmap "+name+" downstream")
	}
}

// waitConverged waits until the owned configmaps downstream are exactly
// names, each with data v=1 unless values says otherwise.
func (e *outageEnv) waitConverged(names []string, values map[string]string) {
	e.t.Helper()
	want := slices.Sorted(slices.Values(names))
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		list, err := e.down.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: e.ownerSelector()})
		require.NoError(c, err)
		var got, wrong []string
		for _, cm := range list.Items {
			got = append(got, cm.Namespace+"/"+cm.Name)
			v := values[cm.Name]
			if v == "" {
				v = "1"
			}
			if cm.Data["v"] != v {
				wrong = append(wrong, fmt.Sprintf("%s: v=%q, want %q", cm.Name, cm.Data["v"], v))
			}
		}
		slices.Sort(got)
		wantNS := make([]string, len(want))
		for i, n := range want {
			wantNS[i] = e.downNS + "/" + n
		}
		if !slices.Equal(got, wantNS) || len(wrong) > 0 {
			c.Errorf("configmaps %v (want %v), wrong data: %v", got, wantNS, wrong)
			return
		}
	}, syncTimeout, syncTick, "downstream configmaps "+strings.Join(want, ","))
}

// waitReleased waits until the heaven's configmaps carry no finalizer of
// the syncer whose objects (label-me) the syncer no longer holds.
func (e *outageEnv) waitReleased(names ...string) {
	e.t.Helper()
	for _, name := range names {
		require.EventuallyWithT(e.t, func(c *assert.CollectT) {
			ctx := e.t.Context()
			cm, err := e.up.CoreV1().ConfigMaps(e.ns).Get(ctx, name, metav1.GetOptions{})
			require.NoError(c, err)
			held := slices.Contains(cm.Finalizers, v1alpha1.SyncerFinalizer(e.target))
			selected := cm.Labels[v1alpha1.ClusterLabel] == e.target
			assert.Truef(c, held == selected, "finalizers %v, labels %v", cm.Finalizers, cm.Labels)
		}, syncTimeout, syncTick, "configmap "+name+" in the heaven as expected")
	}
}

func (e *outageEnv) waitUpstreamGone(names ...string) {
	e.t.Helper()
	for _, name := range names {
		require.EventuallyWithT(e.t, func(c *assert.CollectT) {
			ctx := e.t.Context()
			_, err := e.up.CoreV1().ConfigMaps(e.ns).Get(ctx, name, metav1.GetOptions{})
			assertNotFound(c, err)
		}, syncTimeout, syncTick, "configmap "+name+" gone from the heaven")
	}
}

// waitDeploymentStatus waits until the heaven's deployment carries the
// status the cluster's controllers gave its copy for replicas.
func (e *outageEnv) waitDeploymentStatus(name string, replicas int32) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		d, err := e.up.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Truef(c, d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == replicas && d.Status.UpdatedReplicas == replicas,
			"generation %d, status %+v", d.Generation, d.Status)
	}, syncTimeout, syncTick, fmt.Sprintf("deployment %s status for %d replicas in the heaven", name, replicas))
}

// waitDownstreamDeploymentStatus waits until the cluster's controllers
// report replicas for the deployment's copy.
func (e *outageEnv) waitDownstreamDeploymentStatus(name string, replicas int32) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		d, err := e.down.AppsV1().Deployments(e.downNS).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Truef(c, d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == replicas, "status %+v", d.Status)
	}, syncTimeout, syncTick, fmt.Sprintf("deployment %s status for %d replicas downstream", name, replicas))
}

// requireOneDownstreamNamespace checks that the syncer made one namespace
// for the heaven's one namespace: nothing duplicated.
func (e *outageEnv) requireOneDownstreamNamespace() {
	e.t.Helper()
	list, err := e.down.CoreV1().Namespaces().List(e.t.Context(), metav1.ListOptions{LabelSelector: e.ownerSelector()})
	require.NoError(e.t, err)
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	require.Equal(e.t, []string{e.downNS}, names, "downstream namespaces")
}

func (e *outageEnv) ownerSelector() string {
	return syncer.HeavenLabel + "=" + e.heaven + "," + syncer.SyncTargetLabel + "=" + e.target
}
