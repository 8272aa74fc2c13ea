package synctarget

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	heavenfake "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/fake"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/syncer"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// fixture is a controller over fake root and physical clients, with a
// clock the test moves. Informers are not run: the test puts what the
// clients hold into their stores (sync) before each reconcile.
type fixture struct {
	t       *testing.T
	c       *Controller
	root    *heavenfake.Clientset
	phys    *dynamicfake.FakeDynamicClient
	now     time.Time
	issued  int
	connect func([]byte) (dynamic.Interface, error)
}

const (
	testTarget = "east"
	testHeaven = "team-a"
)

func newFixture(t *testing.T, target *v1alpha1.SyncTarget) *fixture {
	f := &fixture{t: t, now: time.Now()}
	bundle, err := pki.Ensure(t.TempDir(), nil)
	require.NoError(t, err)
	f.root = heavenfake.NewSimpleClientset()
	f.phys = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		install.NamespacesResource: "NamespaceList", install.SecretsResource: "SecretList",
		install.ServiceAccountsResource: "ServiceAccountList", install.DeploymentsResource: "DeploymentList",
		install.ClusterRolesResource: "ClusterRoleList", install.ClusterRoleBindingsResource: "ClusterRoleBindingList",
	})
	f.phys.PrependReactor("patch", "*", applyReactor(f.phys.Tracker()))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "clusters", Name: "east-kubeconfig"},
		Data:       map[string][]byte{v1alpha1.DefaultKubeconfigKey: []byte("physical cluster kubeconfig")},
	}
	kube := kubefake.NewClientset(secret)
	f.connect = func(kubeconfig []byte) (dynamic.Interface, error) {
		require.Equal(t, "physical cluster kubeconfig", string(kubeconfig))
		return f.phys, nil
	}
	opts := DefaultOptions()
	opts.SyncerImage = "example.com/syncer:v1"
	opts.CredentialValidity = 24 * time.Hour
	opts.Now = func() time.Time { return f.now }
	f.c = New(f.root, kube, Deps{
		Access: Access{
			ServerURL: "https://heaven.example:6443",
			CAPEM:     bundle.CAPEM(),
			CAPool:    bundle.CAPool,
			Issue: func(user string, groups []string, validFor time.Duration) ([]byte, []byte, error) {
				f.issued++
				return bundle.IssueClientCert(user, groups, validFor)
			},
			Connect: func(kubeconfig []byte) (dynamic.Interface, error) { return f.connect(kubeconfig) },
		},
		Heaven: func(context.Context, string) (*rest.Config, func(), error) {
			return nil, nil, ErrNoHeaven
		},
	}, opts)
	require.NoError(t, f.c.secretsInf.GetIndexer().Add(secret))
	_, err = f.root.HeavenV1alpha1().SyncTargets().Create(t.Context(), target, metav1.CreateOptions{})
	require.NoError(t, err)
	return f
}

// applyReactor makes the fake's server-side apply create or replace.
func applyReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa, ok := a.(clienttesting.PatchAction)
		if !ok || pa.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(pa.GetPatch(), &obj.Object); err != nil {
			return true, nil, err
		}
		gvr, ns := pa.GetResource(), pa.GetNamespace()
		var err error
		if _, getErr := tracker.Get(gvr, ns, pa.GetName()); apierrors.IsNotFound(getErr) {
			err = tracker.Create(gvr, obj, ns)
		} else {
			err = tracker.Update(gvr, obj, ns)
		}
		if err != nil {
			return true, nil, err
		}
		got, err := tracker.Get(gvr, ns, pa.GetName())
		return true, got, err
	}
}

func testSyncTarget() *v1alpha1.SyncTarget {
	return &v1alpha1.SyncTarget{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"},
		ObjectMeta: metav1.ObjectMeta{Name: testTarget, UID: "uid-1", Generation: 1},
		Spec: v1alpha1.SyncTargetSpec{
			Heaven:              testHeaven,
			KubeconfigSecretRef: &v1alpha1.SecretKeyReference{Namespace: "clusters", Name: "east-kubeconfig"},
			Resources:           []string{"configmaps", "deployments.apps"},
			HeartbeatInterval:   &metav1.Duration{Duration: 2 * time.Second},
		},
	}
}

// reconcile puts the SyncTarget as the root client has it into the cache
// and reconciles it.
func (f *fixture) reconcile() (time.Duration, error) {
	f.t.Helper()
	st, err := f.root.HeavenV1alpha1().SyncTargets().Get(f.t.Context(), testTarget, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	require.NoError(f.t, err)
	require.NoError(f.t, f.c.targets.GetStore().Update(st))
	return f.c.reconcile(f.t.Context(), testTarget)
}

func (f *fixture) target() *v1alpha1.SyncTarget {
	f.t.Helper()
	st, err := f.root.HeavenV1alpha1().SyncTargets().Get(f.t.Context(), testTarget, metav1.GetOptions{})
	require.NoError(f.t, err)
	return st
}

func (f *fixture) condition(typ string) metav1.Condition {
	f.t.Helper()
	c := meta.FindStatusCondition(f.target().Status.Conditions, typ)
	require.NotNil(f.t, c, "condition %s", typ)
	return *c
}

// installedSecret is the kubeconfig installed in the physical cluster.
func (f *fixture) installedKubeconfig() []byte {
	f.t.Helper()
	data, err := installedKubeconfig(f.t.Context(), f.phys, testTarget)
	require.NoError(f.t, err)
	require.NotNil(f.t, data)
	return data
}

func (f *fixture) heartbeat() {
	f.t.Helper()
	st, err := f.root.HeavenV1alpha1().SyncTargets().Get(f.t.Context(), testTarget, metav1.GetOptions{})
	require.NoError(f.t, err)
	at := metav1.NewTime(f.now).Rfc3339Copy() // as the API server stores it
	st.Status.LastSyncerHeartbeatTime = &at
	_, err = f.root.HeavenV1alpha1().SyncTargets().UpdateStatus(f.t.Context(), st, metav1.UpdateOptions{})
	require.NoError(f.t, err)
}

func TestReconcileInstallsAndTracksHeartbeats(t *testing.T) {
	f := newFixture(t, testSyncTarget())

	_, err := f.reconcile()
	require.NoError(t, err)
	assert.Equal(t, []string{v1alpha1.SyncTargetFinalizer}, f.target().Finalizers, "the finalizer comes first")
	assert.Empty(t, f.phys.Actions(), "nothing installed before the finalizer is there")

	again, err := f.reconcile()
	require.NoError(t, err)
	installed := f.condition(v1alpha1.SyncTargetInstalled)
	assert.Equal(t, metav1.ConditionTrue, installed.Status, installed.Message)
	assert.Equal(t, int64(1), installed.ObservedGeneration)
	ready := f.condition(v1alpha1.SyncTargetReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, ReasonHeartbeatStale, ready.Reason)
	assert.Equal(t, 10*time.Minute, again, "reinstalled to repair drift")
	assert.Equal(t, 1, f.issued)

	ns := install.Namespace(testTarget)
	for _, o := range []struct {
		gvr             schema.GroupVersionResource
		namespace, name string
	}{
		{install.NamespacesResource, "", ns}, {install.ServiceAccountsResource, ns, install.ServiceAccountName},
		{install.ClusterRolesResource, "", ns}, {install.ClusterRoleBindingsResource, "", ns},
		{install.SecretsResource, ns, install.SecretName}, {install.DeploymentsResource, ns, install.DeploymentName},
	} {
		_, err := f.phys.Resource(o.gvr).Namespace(o.namespace).Get(t.Context(), o.name, metav1.GetOptions{})
		assert.NoError(t, err, "%s %s/%s installed", o.gvr.Resource, o.namespace, o.name)
	}
	cred, err := install.ParseKubeconfig(f.installedKubeconfig())
	require.NoError(t, err)
	assert.Equal(t, "https://heaven.example:6443/clusters/team-a", cred.Server)
	cert, err := parseCert(cred.CertPEM)
	require.NoError(t, err)
	assert.Equal(t, "heaven:syncer:team-a:east", cert.Subject.CommonName)
	assert.Equal(t, []string{pki.SyncerGroup}, cert.Subject.Organization)

	t.Run("a heartbeat makes it Ready without installing again", func(t *testing.T) {
		f.phys.ClearActions()
		f.heartbeat()
		again, err := f.reconcile()
		require.NoError(t, err)
		assert.Empty(t, f.phys.Actions(), "status changes do not apply the manifests again")
		assert.Equal(t, metav1.ConditionTrue, f.condition(v1alpha1.SyncTargetReady).Status)
		assert.InDelta(t, float64(6*time.Second+staleSlack), float64(again), float64(time.Second), "looked at again when the heartbeat goes stale")
	})

	t.Run("heartbeats stop: not Ready", func(t *testing.T) {
		f.now = f.now.Add(7 * time.Second)
		_, err := f.reconcile()
		require.NoError(t, err)
		ready := f.condition(v1alpha1.SyncTargetReady)
		assert.Equal(t, metav1.ConditionFalse, ready.Status)
		assert.Equal(t, ReasonHeartbeatStale, ready.Reason)
		assert.Equal(t, metav1.ConditionFalse, f.condition(v1alpha1.SyncTargetSyncerHeartbeat).Status)
	})

	t.Run("reinstalling keeps a good credential", func(t *testing.T) {
		before := f.installedKubeconfig()
		f.now = f.now.Add(11 * time.Minute)
		f.phys.ClearActions()
		_, err := f.reconcile()
		require.NoError(t, err)
		assert.NotEmpty(t, f.phys.Actions(), "applied again after the reinstall period")
		assert.Equal(t, before, f.installedKubeconfig())
		assert.Equal(t, 1, f.issued)
	})

	t.Run("a credential past half its lifetime is replaced", func(t *testing.T) {
		before := f.installedKubeconfig()
		f.now = f.now.Add(12 * time.Hour)
		_, err := f.reconcile()
		require.NoError(t, err)
		assert.NotEqual(t, before, f.installedKubeconfig())
		assert.Equal(t, 2, f.issued)
	})

	t.Run("deletion uninstalls and lets the SyncTarget go", func(t *testing.T) {
		// A namespace the syncer created for the heaven, and one of another target.
		for name, target := range map[string]string{"heaven-abc": testTarget, "heaven-def": "west"} {
			ns := &unstructured.Unstructured{}
			ns.SetAPIVersion("v1")
			ns.SetKind("Namespace")
			ns.SetName(name)
			ns.SetLabels(map[string]string{syncer.HeavenLabel: testHeaven, syncer.SyncTargetLabel: target})
			_, err := f.phys.Resource(install.NamespacesResource).Create(t.Context(), ns, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		st, err := f.root.HeavenV1alpha1().SyncTargets().Get(t.Context(), testTarget, metav1.GetOptions{})
		require.NoError(t, err)
		now := metav1.NewTime(f.now)
		st.DeletionTimestamp = &now
		_, err = f.root.HeavenV1alpha1().SyncTargets().Update(t.Context(), st, metav1.UpdateOptions{})
		require.NoError(t, err)

		_, err = f.reconcile()
		require.NoError(t, err)
		assert.Empty(t, f.target().Finalizers)
		for _, o := range install.Installed(testTarget) {
			_, err := f.phys.Resource(o.Resource).Get(t.Context(), o.GetName(), metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "%s %s deleted: %v", o.GetKind(), o.GetName(), err)
		}
		_, err = f.phys.Resource(install.NamespacesResource).Get(t.Context(), "heaven-abc", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "the syncer's namespaces go too: %v", err)
		_, err = f.phys.Resource(install.NamespacesResource).Get(t.Context(), "heaven-def", metav1.GetOptions{})
		assert.NoError(t, err, "another target's namespace stays")
	})
}

func TestReconcileReportsInstallFailures(t *testing.T) {
	t.Run("no kubeconfigSecretRef: not managed", func(t *testing.T) {
		st := testSyncTarget()
		st.Spec.KubeconfigSecretRef = nil
		f := newFixture(t, st)
		_, err := f.reconcile()
		require.NoError(t, err)
		_, err = f.reconcile()
		require.NoError(t, err)
		c := f.condition(v1alpha1.SyncTargetInstalled)
		assert.Equal(t, metav1.ConditionUnknown, c.Status)
		assert.Equal(t, ReasonNotManaged, c.Reason)
		assert.Empty(t, f.phys.Actions())
	})
	t.Run("missing Secret: waits for it without backoff", func(t *testing.T) {
		st := testSyncTarget()
		st.Spec.KubeconfigSecretRef.Name = "missing"
		f := newFixture(t, st)
		_, err := f.reconcile()
		require.NoError(t, err)
		_, err = f.reconcile()
		require.NoError(t, err)
		c := f.condition(v1alpha1.SyncTargetInstalled)
		assert.Equal(t, metav1.ConditionFalse, c.Status)
		assert.Equal(t, ReasonKubeconfigInvalid, c.Reason)
		assert.Contains(t, c.Message, "clusters/missing")
	})
	t.Run("apply fails: reported and retried with backoff", func(t *testing.T) {
		f := newFixture(t, testSyncTarget())
		f.phys.PrependReactor("patch", "deployments", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "syncer", nil)
		})
		_, err := f.reconcile()
		require.NoError(t, err)
		_, err = f.reconcile()
		require.Error(t, err)
		c := f.condition(v1alpha1.SyncTargetInstalled)
		assert.Equal(t, metav1.ConditionFalse, c.Status)
		assert.Equal(t, ReasonApplyFailed, c.Reason)
		assert.Contains(t, c.Message, "Deployment syncer")
	})
}

func TestReusableCredential(t *testing.T) {
	bundle, err := pki.Ensure(t.TempDir(), nil)
	require.NoError(t, err)
	other, err := pki.Ensure(t.TempDir(), nil)
	require.NoError(t, err)
	user := pki.SyncerUser(testHeaven, testTarget)
	kubeconfig := func(b *pki.Bundle, user string, groups ...string) []byte {
		cert, key, err := b.IssueClientCert(user, groups, 10*time.Hour)
		require.NoError(t, err)
		data, err := install.Kubeconfig("https://h:1", testHeaven, b.CAPEM(), cert, key)
		require.NoError(t, err)
		return data
	}
	now := time.Now()
	good := kubeconfig(bundle, user, pki.SyncerGroup)
	_, _, rotateAt, ok := ReusableCredential(good, user, pki.SyncerGroup, bundle.CAPool, now)
	assert.True(t, ok)
	assert.WithinDuration(t, now.Add(5*time.Hour-30*time.Minute), rotateAt, time.Minute, "half of 11 hours from an hour ago")
	_, _, _, ok = ReusableCredential(good, user, pki.SyncerGroup, bundle.CAPool, now.Add(5*time.Hour))
	assert.False(t, ok, "past half its lifetime")
	_, _, _, ok = ReusableCredential(good, pki.SyncerUser("team-b", testTarget), pki.SyncerGroup, bundle.CAPool, now)
	assert.False(t, ok, "another identity")
	_, _, _, ok = ReusableCredential(kubeconfig(bundle, user), user, pki.SyncerGroup, bundle.CAPool, now)
	assert.False(t, ok, "without the syncer group")
	_, _, _, ok = ReusableCredential(kubeconfig(other, user, pki.SyncerGroup), user, pki.SyncerGroup, bundle.CAPool, now)
	assert.False(t, ok, "issued by another CA")
	_, _, _, ok = ReusableCredential([]byte("garbage"), user, pki.SyncerGroup, bundle.CAPool, now)
	assert.False(t, ok)
	_, _, _, ok = ReusableCredential(nil, user, pki.SyncerGroup, bundle.CAPool, now)
	assert.False(t, ok)
}

func TestConnectKubeconfigRefusesOutsideReferences(t *testing.T) {
	for name, kubeconfig := range map[string]string{
		"exec plugin": `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://x"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "id"]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c`,
		"files": `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://x", certificate-authority: /etc/ca.crt}}]
users: [{name: u, user: {client-certificate: /etc/passwd, client-key: /etc/shadow}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c`,
	} {
		_, err := ConnectKubeconfig([]byte(kubeconfig))
		assert.Error(t, err, name)
	}
	_, err := ConnectKubeconfig([]byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://x", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c`))
	assert.NoError(t, err)
}
