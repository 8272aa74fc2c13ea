package integration

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// scopedConfig is a client configuration for heaven with a client
// certificate for user in groups, issued by the server's CA.
func scopedConfig(t *testing.T, ts *framework.HeavenServer, heaven, user string, groups ...string) *rest.Config {
	t.Helper()
	ca, err := pki.LoadCA(filepath.Join(ts.DataDir, "pki"))
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueClientCert(user, groups, time.Hour)
	require.NoError(t, err)
	return &rest.Config{
		Host:            ts.HeavenURL(heaven),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CAPEM(), CertData: certPEM, KeyData: keyPEM},
		Timeout:         30 * time.Second,
	}
}

func TestScopedSyncerCredential(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.ClusterController = false })
	ctx := t.Context()
	waitSyncTargetsServed(t, ts)
	for _, st := range []struct{ name, heaven string }{{"east", "team-a"}, {"west", "team-b"}} {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.SyncTarget{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"},
			ObjectMeta: metav1.ObjectMeta{Name: st.name},
			Spec:       v1alpha1.SyncTargetSpec{Heaven: st.heaven},
		})
		require.NoError(t, err)
		_, err = ts.Dynamic("root").Resource(v1alpha1.SyncTargetsResource).Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	user := pki.SyncerUser("team-a", "east")
	own := scopedConfig(t, ts, "team-a", user, pki.SyncerGroup)
	ownKube := kubernetes.NewForConfigOrDie(own)
	otherKube := kubernetes.NewForConfigOrDie(scopedConfig(t, ts, "team-b", user, pki.SyncerGroup))
	rootCfg := scopedConfig(t, ts, "root", user, pki.SyncerGroup)
	targets := dynamic.NewForConfigOrDie(rootCfg).Resource(v1alpha1.SyncTargetsResource)

	forbidden := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
	}

	t.Run("its heaven: everything", func(t *testing.T) {
		_, err := ownKube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "synced"}, Data: map[string]string{"a": "b"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		cms, err := ownKube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, cms.Items)
		_, err = ownKube.Discovery().ServerGroups()
		require.NoError(t, err)
	})

	t.Run("another heaven: 403", func(t *testing.T) {
		_, err := otherKube.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		forbidden(t, err)
		_, err = otherKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		forbidden(t, err)
	})

	t.Run("its SyncTarget in root: get it, update and patch its status, list and watch it alone", func(t *testing.T) {
		u, err := targets.Get(ctx, "east", metav1.GetOptions{})
		require.NoError(t, err)
		spec := u.Object["spec"]
		require.NoError(t, unstructured.SetNestedField(u.Object, time.Now().UTC().Format(time.RFC3339), "status", "lastSyncerHeartbeatTime"))
		u, err = targets.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		require.NoError(t, err)
		_, err = targets.Patch(ctx, "east", types.MergePatchType, []byte(`{"status":{"resources":[{"resource":"configmaps","state":"Synced"}]}}`),
			metav1.PatchOptions{}, "status")
		require.NoError(t, err)
		// Through the status subresource, spec fields do not change.
		_, err = targets.Patch(ctx, "east", types.MergePatchType,
			[]byte(`{"spec":{"kubeconfigSecretRef":{"name":"west-kubeconfig"},"resources":["secrets"]},"status":{}}`), metav1.PatchOptions{}, "status")
		require.NoError(t, err)
		u, err = targets.Get(ctx, "east", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, spec, u.Object["spec"], "a status write leaves the spec alone")

		only := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "east").String()}
		list, err := targets.List(ctx, only)
		require.NoError(t, err)
		require.Len(t, list.Items, 1)
		watchCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		only.ResourceVersion = "0"
		w, err := targets.Watch(watchCtx, only)
		require.NoError(t, err)
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			assert.Equal(t, "east", ev.Object.(*unstructured.Unstructured).GetName())
		case <-watchCtx.Done():
			t.Fatal("no event from the watch of its SyncTarget")
		}
	})

	t.Run("its SyncTarget's spec and metadata: 403 for every verb", func(t *testing.T) {
		for _, patch := range []string{
			`{"spec":{"kubeconfigSecretRef":{"name":"west-kubeconfig"}}}`,
			`{"spec":{"resources":["secrets","clusterroles.rbac.authorization.k8s.io"]}}`,
			`{"spec":{"heaven":"team-b"}}`,
			`{"spec":{"heartbeatInterval":"1h"}}`,
			`{"metadata":{"labels":{"x":"y"}}}`,
			`{"metadata":{"annotations":{"seen":"yes"}}}`,
			`{"metadata":{"finalizers":null}}`,
		} {
			for _, pt := range []types.PatchType{types.MergePatchType, types.ApplyPatchType} {
				_, err := targets.Patch(ctx, "east", pt, []byte(patch), metav1.PatchOptions{FieldManager: "syncer", Force: ptrTo(true)})
				forbidden(t, err)
			}
		}
		u, err := targets.Get(ctx, "east", metav1.GetOptions{})
		require.NoError(t, err)
		_, err = targets.Update(ctx, u, metav1.UpdateOptions{})
		forbidden(t, err)
		u.SetResourceVersion("")
		_, err = targets.Create(ctx, u, metav1.CreateOptions{})
		forbidden(t, err)
		forbidden(t, targets.Delete(ctx, "east", metav1.DeleteOptions{}))
		forbidden(t, targets.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=east"}))
	})

	t.Run("anything else in root: 403", func(t *testing.T) {
		_, err := targets.Get(ctx, "west", metav1.GetOptions{})
		forbidden(t, err)
		_, err = targets.Patch(ctx, "west", types.MergePatchType, []byte(`{"status":{}}`), metav1.PatchOptions{}, "status")
		forbidden(t, err)
		_, err = targets.List(ctx, metav1.ListOptions{})
		forbidden(t, err)
		_, err = targets.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=west"})
		forbidden(t, err)
		forbidden(t, targets.Delete(ctx, "east", metav1.DeleteOptions{}))
		_, err = dynamic.NewForConfigOrDie(rootCfg).Resource(v1alpha1.HeavensResource).List(ctx, metav1.ListOptions{})
		forbidden(t, err)
		_, err = kubernetes.NewForConfigOrDie(rootCfg).CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		forbidden(t, err)
	})

	t.Run("the 403 is a Kubernetes Status", func(t *testing.T) {
		client, err := rest.HTTPClientFor(rootCfg)
		require.NoError(t, err)
		resp, err := client.Get(ts.URL() + "/clusters/team-b/api/v1/secrets")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
		var st metav1.Status
		require.NoError(t, json.Unmarshal(body, &st), "%s", body)
		assert.Equal(t, "Status", st.Kind)
		assert.Equal(t, metav1.StatusReasonForbidden, st.Reason)
		assert.Equal(t, int32(http.StatusForbidden), st.Code)
		assert.Contains(t, st.Message, user)
	})

	t.Run("server endpoints: public ones only", func(t *testing.T) {
		client, err := rest.HTTPClientFor(rootCfg)
		require.NoError(t, err)
		for path, code := range map[string]int{"/healthz": http.StatusOK, "/version": http.StatusOK, "/metrics": http.StatusForbidden} {
			resp, err := client.Get(ts.URL() + path)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, code, resp.StatusCode, path)
		}
	})

	t.Run("the syncer group without a syncer name reaches nothing", func(t *testing.T) {
		mallory := kubernetes.NewForConfigOrDie(scopedConfig(t, ts, "team-a", "mallory", pki.SyncerGroup))
		_, err := mallory.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		forbidden(t, err)
	})

	t.Run("other users have what the heaven's RBAC grants", func(t *testing.T) {
		someone := kubernetes.NewForConfigOrDie(scopedConfig(t, ts, "team-b", "someone", "developers"))
		_, err := someone.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		forbidden(t, err)
		ts.Kubectl(t, "team-b", "", "create", "clusterrolebinding", "developers-view", "--clusterrole=view", "--group=developers")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := someone.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
			assert.NoError(c, err)
		}, 10*time.Second, 50*time.Millisecond)
	})
}

func TestSyncTargetSpecHeavenRequiredAndImmutable(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.ClusterController = false })
	ctx := t.Context()
	targets := ts.Dynamic("root").Resource(v1alpha1.SyncTargetsResource)
	waitSyncTargetsServed(t, ts)
	obj := func(spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "SyncTarget",
			"metadata": map[string]any{"name": "east"}, "spec": spec,
		}}
	}
	_, err := targets.Create(ctx, obj(map[string]any{"resources": []any{"configmaps"}}), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "spec.heaven is required: %v", err)
	_, err = targets.Create(ctx, obj(map[string]any{"heaven": "team-a", "heartbeatInterval": "soon"}), metav1.CreateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "heartbeatInterval is a duration: %v", err)
	created, err := targets.Create(ctx, obj(map[string]any{"heaven": "team-a", "heartbeatInterval": "1.5s"}), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(created.Object, "team-b", "spec", "heaven"))
	_, err = targets.Update(ctx, created, metav1.UpdateOptions{})
	require.True(t, apierrors.IsInvalid(err), "spec.heaven is immutable: %v", err)
	assert.Contains(t, err.Error(), "spec.heaven is immutable")
}

func ptrTo[T any](v T) *T { return &v }

// waitSyncTargetsServed waits until root serves SyncTargets (heaven-server
// installs its CRDs one after the other).
func waitSyncTargetsServed(t *testing.T, ts *framework.HeavenServer) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := ts.Dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource).List(t.Context(), metav1.ListOptions{})
		assert.NoError(c, err)
	}, time.Minute, tick, "SyncTargets served in root")
}
