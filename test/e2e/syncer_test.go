package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/pkg/syncer"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

var (
	widgetsGVR   = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	ingressesGVR = networkingv1.SchemeGroupVersion.WithResource("ingresses")
)

// stableFor is how long the downstream objects must not change after
// convergence for the test to call it free of update loops.
const stableFor = 3 * time.Second

// TestSyncer drives one heaven against a real physical cluster (a real
// kube-apiserver and kube-controller-manager) through the syncer running
// in the test process, as cmd/syncer runs it.
func TestSyncer(t *testing.T) {
	phys := framework.StartCluster(t, "phys")
	hs := framework.StartHeavenServer(t, nil)
	createCRD(t, apiextensionsclient.NewForConfigOrDie(phys.RESTConfig()), widgetCRD())

	const heaven, target, ns = "team-a", "phys", "demo"
	e := &syncEnv{t: t, hs: hs, phys: phys, heaven: heaven, target: target, ns: ns,
		up: hs.Kube(heaven), upDyn: hs.Dynamic(heaven), down: phys.Client(), downDyn: dynamic.NewForConfigOrDie(phys.RESTConfig()),
		downNS: syncer.DownstreamNamespace(heaven, target, ns)}
	// The flag asks for three resources, the SyncTarget for three more:
	// a built-in type to build from OpenAPI and two that cannot be synced.
	e.setUpHeaven([]string{"ingresses.networking.k8s.io", "pods", "gadgets.example.com"})

	// Objects that exist before the syncer starts come through its
	// initial list.
	e.createConfigMap("app-config", true, map[string]string{"color": "blue"})
	e.createConfigMap("plain", false, map[string]string{"never": "synced"})

	run := e.startSyncer("configmaps,secrets,deployments.apps,widgets.example.com")

	t.Run("types are taught to the heaven and reported", func(t *testing.T) {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			assert.NoError(c, crdEstablished(t.Context(), hs.CRDs(heaven), "widgets.example.com"))
			assert.NoError(c, crdEstablished(t.Context(), hs.CRDs(heaven), "ingresses.networking.k8s.io"))
		}, syncTimeout, syncTick, "widgets and ingresses served by the heaven")
		crd, err := hs.CRDs(heaven).ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "ingresses.networking.k8s.io", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, string(v1alpha1.TypeSourceOpenAPI), crd.Annotations[syncer.CRDSourceAnnotation])
		assert.NotNil(t, crd.Spec.Versions[0].Subresources.Status, "ingress status subresource")

		st := e.waitSyncTarget("every resource resolved", func(st *v1alpha1.SyncTarget) error {
			want := map[string]v1alpha1.ResourceSyncState{
				"configmaps": v1alpha1.ResourceSynced, "secrets": v1alpha1.ResourceSynced, "deployments.apps": v1alpha1.ResourceSynced,
				"widgets.example.com": v1alpha1.ResourceSynced, "ingresses.networking.k8s.io": v1alpha1.ResourceSynced,
				"pods": v1alpha1.ResourceNotSynced, "gadgets.example.com": v1alpha1.ResourceNotSynced,
			}
			got := map[string]v1alpha1.ResourceSyncState{}
			for _, r := range st.Status.Resources {
				got[r.Resource] = r.State
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("resources %v, want %v", got, want)
			}
			return nil
		})
		sources := map[string]v1alpha1.ResourceSyncStatus{}
		for _, r := range st.Status.Resources {
			sources[r.Resource] = r
		}
		assert.Equal(t, v1alpha1.TypeSourceHeaven, sources["configmaps"].Source)
		assert.Equal(t, v1alpha1.TypeSourceHeaven, sources["secrets"].Source)
		assert.Equal(t, v1alpha1.TypeSourceHeaven, sources["deployments.apps"].Source)
		assert.Equal(t, v1alpha1.TypeSourceCRD, sources["widgets.example.com"].Source)
		assert.Equal(t, v1alpha1.TypeSourceOpenAPI, sources["ingresses.networking.k8s.io"].Source)
		assert.Equal(t, "NotServedByHeaven", sources["pods"].Reason, sources["pods"].Message)
		assert.Equal(t, "NotInCluster", sources["gadgets.example.com"].Reason, sources["gadgets.example.com"].Message)
	})

	t.Run("heartbeat and conditions in SyncTarget status", func(t *testing.T) {
		first := e.waitSyncTarget("a heartbeat", func(st *v1alpha1.SyncTarget) error {
			if st.Status.LastSyncerHeartbeatTime == nil {
				return fmt.Errorf("no heartbeat")
			}
			return nil
		}).Status.LastSyncerHeartbeatTime.Time
		// Ready is heaven-server's cluster controller's verdict on the
		// heartbeat.
		st := e.waitSyncTarget("a later heartbeat, Ready", func(st *v1alpha1.SyncTarget) error {
			if !st.Status.LastSyncerHeartbeatTime.After(first) {
				return fmt.Errorf("heartbeat still %v", first)
			}
			return expect(meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.SyncTargetReady), "conditions %+v", st.Status.Conditions)
		})
		assert.True(t, meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.SyncTargetSyncerHeartbeat))
		assert.True(t, meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.SyncTargetClusterReachable))
		synced := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetResourcesSynced)
		require.NotNil(t, synced)
		assert.Equal(t, metav1.ConditionFalse, synced.Status)
		assert.Contains(t, synced.Message, "pods")
	})

	t.Run("labelled objects appear downstream in the mapped namespace", func(t *testing.T) {
		e.createDeployment("web", 1)
		e.createSecret("creds", map[string][]byte{"token": []byte("s3cr3t")})
		e.createWidget("w1", 3)
		e.createIngress("site")
		cm := e.waitDownstreamConfigMap("app-config", func(cm *corev1.ConfigMap) error {
			return expect(cm.Data["color"] == "blue", "data %v", cm.Data)
		})
		assert.Equal(t, heaven, cm.Labels[syncer.HeavenLabel])
		assert.Equal(t, target, cm.Labels[syncer.SyncTargetLabel])
		assert.Equal(t, ns, cm.Annotations[syncer.UpstreamNamespaceAnnotation])

		dns, err := e.down.CoreV1().Namespaces().Get(t.Context(), e.downNS, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, map[string]string{syncer.HeavenLabel: heaven, syncer.SyncTargetLabel: target, syncer.UpstreamNamespaceLabel: ns,
			"kubernetes.io/metadata.name": e.downNS}, dns.Labels)
		assert.JSONEq(t, `{"heaven":"team-a","syncTarget":"phys","namespace":"demo"}`, dns.Annotations[syncer.NamespaceLocatorAnnotation])

		e.waitDownstream(appsv1.SchemeGroupVersion.WithResource("deployments"), "web", nil)
		e.waitDownstream(widgetsGVR, "w1", func(u *unstructured.Unstructured) error {
			size, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			return expect(size == 3, "spec.size %d", size)
		})
		e.waitDownstream(ingressesGVR, "site", nil)
		e.waitDownstreamSecret("creds", "s3cr3t")

		up, err := e.up.CoreV1().ConfigMaps(ns).Get(t.Context(), "app-config", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, up.Finalizers, v1alpha1.SyncerFinalizer(target))
	})

	t.Run("deployment status from kube-controller-manager flows up", func(t *testing.T) {
		e.waitUpstreamDeployment("web", func(d *appsv1.Deployment) error {
			return deploymentObserved(d, 1)
		})
		rss, err := e.down.AppsV1().ReplicaSets(e.downNS).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		assert.Len(t, rss.Items, 1, "ReplicaSets of web downstream")
	})

	t.Run("widget status written downstream flows up", func(t *testing.T) {
		down, err := e.downDyn.Resource(widgetsGVR).Namespace(e.downNS).Get(t.Context(), "w1", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedMap(down.Object, map[string]any{
			"phase": "Ready", "observedGeneration": down.GetGeneration()}, "status"))
		_, err = e.downDyn.Resource(widgetsGVR).Namespace(e.downNS).UpdateStatus(t.Context(), down, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			up, err := e.upDyn.Resource(widgetsGVR).Namespace(ns).Get(ctx, "w1", metav1.GetOptions{})
			require.NoError(c, err)
			phase, _, _ := unstructured.NestedString(up.Object, "status", "phase")
			observed, _, _ := unstructured.NestedInt64(up.Object, "status", "observedGeneration")
			assert.Truef(c, phase == "Ready" && observed == up.GetGeneration(), "status %v, generation %d", up.Object["status"], up.GetGeneration())
		}, syncTimeout, syncTick, "widget status in the heaven")
	})

	t.Run("updates upstream flow down", func(t *testing.T) {
		e.updateConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["color"] = "green" })
		e.waitDownstreamConfigMap("app-config", func(cm *corev1.ConfigMap) error {
			return expect(cm.Data["color"] == "green", "data %v", cm.Data)
		})
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			sec, err := e.up.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
			require.NoError(c, err)
			sec.Data["token"] = []byte("rotated")
			_, err = e.up.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{})
			assert.NoError(c, err)
		}, syncTimeout, syncTick, "updating secret creds")
		e.waitDownstreamSecret("creds", "rotated")
		d, err := e.up.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(t, err)
		d.Spec.Replicas = ptr.To[int32](2)
		_, err = e.up.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{})
		require.NoError(t, err)
		e.waitUpstreamDeployment("web", func(d *appsv1.Deployment) error {
			return deploymentObserved(d, 2)
		})
	})

	t.Run("no update loop after convergence", func(t *testing.T) {
		e.waitDownstream(appsv1.SchemeGroupVersion.WithResource("deployments"), "web", func(u *unstructured.Unstructured) error {
			var d appsv1.Deployment
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
			return expect(d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == 2 && d.Status.UpdatedReplicas == 2,
				"status %+v", d.Status)
		})
		e.waitUpstreamDeployment("web", func(d *appsv1.Deployment) error { return deploymentObserved(d, 2) })
		objects := []struct {
			gvr  schema.GroupVersionResource
			name string
		}{
			{corev1.SchemeGroupVersion.WithResource("configmaps"), "app-config"},
			{appsv1.SchemeGroupVersion.WithResource("deployments"), "web"},
			{widgetsGVR, "w1"},
			{ingressesGVR, "site"},
		}
		versions := func(ctx context.Context) (string, error) {
			var rvs []string
			for _, o := range objects {
				down, err := e.downDyn.Resource(o.gvr).Namespace(e.downNS).Get(ctx, o.name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				up, err := e.upDyn.Resource(o.gvr).Namespace(ns).Get(ctx, o.name, metav1.GetOptions{})
				if err != nil {
					return "", err
				}
				rvs = append(rvs, o.name+"="+down.GetResourceVersion()+"/"+up.GetResourceVersion())
			}
			return strings.Join(rvs, " "), nil
		}
		before, err := versions(t.Context())
		require.NoError(t, err)
		writes := run.writes(t)
		// Poll (not sleep) for stableFor: every poll must see the same versions.
		polls := 0
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for deadline := time.Now().Add(stableFor); time.Now().Before(deadline); <-ticker.C {
			polls++
			now, err := versions(t.Context())
			require.NoError(t, err)
			require.Equal(t, before, now, "resourceVersions (downstream/upstream) changed after convergence")
		}
		t.Logf("resourceVersions stable for %v over %d polls: %s", stableFor, polls, before)
		assert.Equal(t, writes, run.writes(t), "syncer writes after convergence")
	})

	t.Run("an unlabelled object is never synced", func(t *testing.T) {
		_, err := e.down.CoreV1().ConfigMaps(e.downNS).Get(t.Context(), "plain", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "plain downstream: %v", err)
		up, err := e.up.CoreV1().ConfigMaps(ns).Get(t.Context(), "plain", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Empty(t, up.Finalizers)
	})

	t.Run("a downstream object without the owner labels is never touched", func(t *testing.T) {
		squatter, err := e.down.CoreV1().ConfigMaps(e.downNS).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "squatter"}, Data: map[string]string{"owner": "cluster-admin"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		e.createConfigMap("squatter", true, map[string]string{"owner": "heaven"})
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			events, err := e.up.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=squatter"})
			require.NoError(c, err)
			for _, ev := range events.Items {
				if ev.Reason == "NotOwned" && ev.Type == corev1.EventTypeWarning {
					return
				}
			}
			c.Errorf("%d events, none NotOwned", len(events.Items))
		}, syncTimeout, syncTick, "a NotOwned event on the heaven's squatter")
		e.waitSyncTarget("the failure counted", func(st *v1alpha1.SyncTarget) error {
			for _, r := range st.Status.Resources {
				if r.Resource == "configmaps" {
					return expect(r.ObjectsFailed == 1, "configmaps: %+v", r)
				}
			}
			return fmt.Errorf("no configmaps in %+v", st.Status.Resources)
		})
		// The failure blocks nothing else.
		e.createConfigMap("after-squatter", true, map[string]string{"a": "b"})
		e.waitDownstreamConfigMap("after-squatter", nil)

		got, err := e.down.CoreV1().ConfigMaps(e.downNS).Get(t.Context(), "squatter", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, squatter.ResourceVersion, got.ResourceVersion, "squatter changed")
		assert.Equal(t, map[string]string{"owner": "cluster-admin"}, got.Data)

		// Deleting the heaven's squatter leaves the cluster's alone.
		require.NoError(t, e.up.CoreV1().ConfigMaps(ns).Delete(t.Context(), "squatter", metav1.DeleteOptions{}))
		e.waitUpstreamGone(corev1.SchemeGroupVersion.WithResource("configmaps"), "squatter")
		got, err = e.down.CoreV1().ConfigMaps(e.downNS).Get(t.Context(), "squatter", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, squatter.ResourceVersion, got.ResourceVersion, "squatter changed")
	})

	t.Run("removing the label deletes the downstream copy", func(t *testing.T) {
		e.updateConfigMap("after-squatter", func(cm *corev1.ConfigMap) { delete(cm.Labels, v1alpha1.ClusterLabel) })
		e.waitDownstreamGone(corev1.SchemeGroupVersion.WithResource("configmaps"), "after-squatter")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			cm, err := e.up.CoreV1().ConfigMaps(ns).Get(ctx, "after-squatter", metav1.GetOptions{})
			require.NoError(c, err)
			assert.Truef(c, len(cm.Finalizers) == 0, "finalizers %v", cm.Finalizers)
		}, syncTimeout, syncTick, "the finalizer released")
	})

	t.Run("deleting upstream deletes downstream first", func(t *testing.T) {
		// A finalizer of the cluster holds the downstream copy: the
		// heaven's object must wait for it.
		const blocker = "e2e.heaven.dev/block"
		deployments := appsv1.SchemeGroupVersion.WithResource("deployments")
		_, err := e.down.AppsV1().Deployments(e.downNS).Patch(t.Context(), "web", types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":["`+blocker+`"]}}`), metav1.PatchOptions{})
		require.NoError(t, err)
		require.NoError(t, e.up.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}))
		e.waitDownstream(deployments, "web", func(u *unstructured.Unstructured) error {
			return expect(u.GetDeletionTimestamp() != nil, "not being deleted")
		})
		up, err := e.up.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		require.NoError(t, err, "the heaven's web must wait for the cluster's")
		assert.NotNil(t, up.DeletionTimestamp)
		assert.Equal(t, []string{v1alpha1.SyncerFinalizer(target)}, up.Finalizers)

		_, err = e.down.AppsV1().Deployments(e.downNS).Patch(t.Context(), "web", types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
		require.NoError(t, err)
		e.waitUpstreamGone(deployments, "web")
		_, err = e.down.AppsV1().Deployments(e.downNS).Get(t.Context(), "web", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "web downstream after the heaven's is gone: %v", err)
	})

	t.Run("healthz and metrics", func(t *testing.T) {
		assert.Equal(t, "ok", run.get(t, "/healthz"))
		assert.Equal(t, "ok", run.get(t, "/readyz"))
		metrics := run.get(t, "/metrics")
		assert.Contains(t, metrics, `heaven_syncer_objects_synced{heaven="team-a",resource="configmaps",sync_target="phys"}`)
		assert.Contains(t, metrics, `heaven_syncer_reconciles_total{`)
		assert.Contains(t, metrics, `workqueue_depth{name="syncer_objects"}`)
	})

	t.Run("a restarted syncer converges without duplicates", func(t *testing.T) {
		run.stop(t)
		// While no syncer runs: a new object, an update, a deletion (held
		// by the finalizer) and a removed label.
		e.createConfigMap("while-down", true, map[string]string{"x": "1"})
		e.updateConfigMap("app-config", func(cm *corev1.ConfigMap) { cm.Data["color"] = "red" })
		require.NoError(t, e.upDyn.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}))
		e.updateIngress("site", func(u *unstructured.Unstructured) {
			delete(u.Object["metadata"].(map[string]any)["labels"].(map[string]any), v1alpha1.ClusterLabel)
		})

		run = e.startSyncer("configmaps,deployments.apps,widgets.example.com")
		e.waitDownstreamConfigMap("while-down", nil)
		e.waitDownstreamConfigMap("app-config", func(cm *corev1.ConfigMap) error {
			return expect(cm.Data["color"] == "red", "data %v", cm.Data)
		})
		e.waitUpstreamGone(widgetsGVR, "w1")
		e.waitDownstreamGone(widgetsGVR, "w1")
		e.waitDownstreamGone(ingressesGVR, "site")

		owned := metav1.ListOptions{LabelSelector: syncer.HeavenLabel + "=" + heaven + "," + syncer.SyncTargetLabel + "=" + target}
		namespaces, err := e.down.CoreV1().Namespaces().List(t.Context(), owned)
		require.NoError(t, err)
		require.Len(t, namespaces.Items, 1, "downstream namespaces of %s", heaven)
		assert.Equal(t, e.downNS, namespaces.Items[0].Name)
		cms, err := e.down.CoreV1().ConfigMaps("").List(t.Context(), owned)
		require.NoError(t, err)
		var names []string
		for _, cm := range cms.Items {
			names = append(names, cm.Namespace+"/"+cm.Name)
		}
		sort.Strings(names)
		assert.Equal(t, []string{e.downNS + "/app-config", e.downNS + "/while-down"}, names)
	})

	t.Run("two heavens sync the same namespace to one cluster without colliding", func(t *testing.T) {
		// SyncTargets live in root: team-b's is another one.
		other := &syncEnv{t: t, hs: hs, phys: phys, heaven: "team-b", target: target + "-b", ns: ns,
			up: hs.Kube("team-b"), upDyn: hs.Dynamic("team-b"), down: e.down, downDyn: e.downDyn,
			downNS: syncer.DownstreamNamespace("team-b", target+"-b", ns)}
		require.NotEqual(t, e.downNS, other.downNS)
		other.setUpHeaven(nil)
		other.createConfigMap("app-config", true, map[string]string{"color": "purple"})
		other.startSyncer("configmaps")
		other.waitDownstreamConfigMap("app-config", func(cm *corev1.ConfigMap) error {
			return expect(cm.Data["color"] == "purple" && cm.Labels[syncer.HeavenLabel] == "team-b", "configmap %v %v", cm.Labels, cm.Data)
		})
		e.waitDownstreamConfigMap("app-config", func(cm *corev1.ConfigMap) error {
			return expect(cm.Data["color"] == "red", "data %v", cm.Data)
		})

		// Deleting the heaven's namespace deletes its objects downstream
		// (the finalizers hold them meanwhile), then the downstream
		// namespace; the other heaven's stays.
		require.NoError(t, other.up.CoreV1().Namespaces().Delete(t.Context(), ns, metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			_, err := other.up.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			assertNotFound(c, err)
		}, syncTimeout, syncTick, "namespace demo gone from team-b")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			_, err := other.down.CoreV1().Namespaces().Get(ctx, other.downNS, metav1.GetOptions{})
			assertNotFound(c, err)
		}, syncTimeout, syncTick, "team-b's downstream namespace gone")
		_, err := e.down.CoreV1().Namespaces().Get(t.Context(), e.downNS, metav1.GetOptions{})
		require.NoError(t, err)
	})
}

// syncEnv is one heaven, its namespace under test and the physical cluster.
type syncEnv struct {
	t                  *testing.T
	hs                 *framework.HeavenServer
	phys               *framework.Cluster
	heaven, target, ns string
	downNS             string
	up, down           kubernetes.Interface
	upDyn, downDyn     dynamic.Interface
}

// setUpHeaven creates the namespace under test in the heaven and, in root,
// the SyncTarget for the heaven asking for resources. It has no
// kubeconfigSecretRef: the test runs the syncer itself, as by hand, and
// heaven-server's cluster controller only watches its heartbeat.
func (e *syncEnv) setUpHeaven(resources []string) {
	t := e.t
	t.Helper()
	ctx := t.Context()
	_, err := e.up.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createSyncTarget(t, e.hs, &v1alpha1.SyncTarget{
		ObjectMeta: metav1.ObjectMeta{Name: e.target},
		Spec:       v1alpha1.SyncTargetSpec{Heaven: e.heaven, Resources: resources},
	})
}

// syncerRun is a syncer running in the test process.
type syncerRun struct {
	addr   string
	cancel context.CancelFunc
	done   chan error
}

// startSyncer runs the syncer for the heaven as cmd/syncer does (Options →
// Config → Complete → New → Run) until stop or the end of the test.
func (e *syncEnv) startSyncer(resources string) *syncerRun {
	t := e.t
	t.Helper()
	o := syncer.NewOptions()
	o.UpstreamKubeconfig = writeKubeconfig(t, e.hs, e.heaven)
	o.DownstreamKubeconfig = e.phys.Kubeconfig
	o.SyncTarget = e.target
	o.Resources = strings.Split(resources, ",")
	o.HeartbeatInterval = time.Second
	o.TypeResyncInterval = 10 * time.Second
	o.MetricsBindAddress = "127.0.0.1:0"
	return e.runSyncer(o)
}

// runSyncer runs a syncer with options o as cmd/syncer does (Validate →
// Config → Complete → New → Run) until stop or the end of the test.
func (e *syncEnv) runSyncer(o *syncer.Options) *syncerRun {
	t := e.t
	t.Helper()
	require.Empty(t, o.Validate())
	cfg, err := o.Config()
	require.NoError(t, err)
	s, err := cfg.Complete().New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &syncerRun{addr: cfg.MetricsAddr(), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the syncer and waits until Run returned.
func (r *syncerRun) stop(t *testing.T) {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Error("the syncer did not stop within 30s")
	}
}

// get returns the body of path on the syncer's metrics address.
func (r *syncerRun) get(t *testing.T, path string) string {
	t.Helper()
	resp, err := http.Get("http://" + r.addr + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
	return string(body)
}

// writes is the syncer's heaven_syncer_writes_total lines for team-a.
func (r *syncerRun) writes(t *testing.T) string {
	var lines []string
	for _, l := range strings.Split(r.get(t, "/metrics"), "\n") {
		if strings.HasPrefix(l, "heaven_syncer_writes_total{") && strings.Contains(l, `heaven="team-a"`) {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func (e *syncEnv) labels(selected bool) map[string]string {
	if !selected {
		return map[string]string{"app": "demo"}
	}
	return map[string]string{"app": "demo", v1alpha1.ClusterLabel: e.target}
}

func (e *syncEnv) createConfigMap(name string, selected bool, data map[string]string) {
	e.t.Helper()
	_, err := e.up.CoreV1().ConfigMaps(e.ns).Create(e.t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: e.labels(selected)}, Data: data,
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// createSecret creates a labelled secret in the heaven.
func (e *syncEnv) createSecret(name string, data map[string][]byte) {
	e.t.Helper()
	_, err := e.up.CoreV1().Secrets(e.ns).Create(e.t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: e.labels(true)}, Data: data,
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

// waitDownstreamSecret waits until the downstream copy of secret name holds
// token.
func (e *syncEnv) waitDownstreamSecret(name, token string) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		sec, err := e.down.CoreV1().Secrets(e.downNS).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.Truef(c, string(sec.Data["token"]) == token, "token %q", sec.Data["token"])
	}, syncTimeout, syncTick, "secret "+name+" downstream")
}

// updateConfigMap changes a heaven configmap, retrying on conflicts (the
// syncer writes its finalizer).
func (e *syncEnv) updateConfigMap(name string, change func(*corev1.ConfigMap)) {
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

func (e *syncEnv) updateIngress(name string, change func(*unstructured.Unstructured)) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		u, err := e.upDyn.Resource(ingressesGVR).Namespace(e.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		change(u)
		_, err = e.upDyn.Resource(ingressesGVR).Namespace(e.ns).Update(ctx, u, metav1.UpdateOptions{})
		assert.NoError(c, err)
	}, syncTimeout, syncTick, "updating ingress "+name)
}

func (e *syncEnv) createDeployment(name string, replicas int32) {
	e.t.Helper()
	labels := map[string]string{"app": name}
	_, err := e.up.AppsV1().Deployments(e.ns).Create(e.t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: e.labels(true)},
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

func (e *syncEnv) createWidget(name string, size int64) {
	e.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "labels": toAny(e.labels(true))},
		"spec":     map[string]any{"size": size},
	}}
	_, err := e.upDyn.Resource(widgetsGVR).Namespace(e.ns).Create(e.t.Context(), u, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func (e *syncEnv) createIngress(name string) {
	e.t.Helper()
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: e.labels(true)},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "site.example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: ptr.To(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
						Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}},
				}},
			}},
		}}},
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ing)
	require.NoError(e.t, err)
	delete(raw, "status")
	_, err = e.upDyn.Resource(ingressesGVR).Namespace(e.ns).Create(e.t.Context(), &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
	require.NoError(e.t, err)
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// waitSyncTarget waits until the SyncTarget passes check and returns it.
func (e *syncEnv) waitSyncTarget(what string, check func(*v1alpha1.SyncTarget) error) *v1alpha1.SyncTarget {
	e.t.Helper()
	var st v1alpha1.SyncTarget
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		u, err := e.hs.Dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource).Get(ctx, e.target, metav1.GetOptions{})
		require.NoError(c, err)
		st = v1alpha1.SyncTarget{}
		require.NoError(c, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st))
		assert.NoError(c, check(&st))
	}, syncTimeout, syncTick, what)
	return &st
}

func (e *syncEnv) waitDownstreamConfigMap(name string, check func(*corev1.ConfigMap) error) *corev1.ConfigMap {
	e.t.Helper()
	var cm *corev1.ConfigMap
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		var err error
		cm, err = e.down.CoreV1().ConfigMaps(e.downNS).Get(e.t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		if check != nil {
			assert.NoError(c, check(cm))
		}
	}, syncTimeout, syncTick, "configmap "+name+" downstream")
	return cm
}

func (e *syncEnv) waitDownstream(gvr schema.GroupVersionResource, name string, check func(*unstructured.Unstructured) error) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		u, err := e.downDyn.Resource(gvr).Namespace(e.downNS).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		if check != nil {
			assert.NoError(c, check(u))
		}
	}, syncTimeout, syncTick, gvr.Resource+" "+name+" downstream")
}

func (e *syncEnv) waitDownstreamGone(gvr schema.GroupVersionResource, name string) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		_, err := e.downDyn.Resource(gvr).Namespace(e.downNS).Get(ctx, name, metav1.GetOptions{})
		assertNotFound(c, err)
	}, syncTimeout, syncTick, gvr.Resource+" "+name+" gone downstream")
}

func (e *syncEnv) waitUpstreamGone(gvr schema.GroupVersionResource, name string) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		_, err := e.upDyn.Resource(gvr).Namespace(e.ns).Get(ctx, name, metav1.GetOptions{})
		assertNotFound(c, err)
	}, syncTimeout, syncTick, gvr.Resource+" "+name+" gone from the heaven")
}

func (e *syncEnv) waitUpstreamDeployment(name string, check func(*appsv1.Deployment) error) {
	e.t.Helper()
	require.EventuallyWithT(e.t, func(c *assert.CollectT) {
		ctx := e.t.Context()
		d, err := e.up.AppsV1().Deployments(e.ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		assert.NoError(c, check(d))
	}, syncTimeout, syncTick, "deployment "+name+" in the heaven")
}

// deploymentObserved checks that a heaven Deployment carries the status
// kube-controller-manager gave its copy for the heaven's current spec.
func deploymentObserved(d *appsv1.Deployment, replicas int32) error {
	return expect(d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == replicas &&
		d.Status.UpdatedReplicas == replicas && len(d.Status.Conditions) > 0 &&
		meta.IsStatusConditionPresentAndEqual(conditionsOf(d), string(appsv1.DeploymentProgressing), metav1.ConditionTrue),
		"generation %d, status %+v", d.Generation, d.Status)
}

func conditionsOf(d *appsv1.Deployment) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range d.Status.Conditions {
		out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status)})
	}
	return out
}

func expect(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// widgetCRD is a type only the physical cluster has at first.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer"},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"phase":              {Type: "string"},
							"observedGeneration": {Type: "integer", Format: "int64"},
						}},
					},
				}},
			}},
		},
	}
}
