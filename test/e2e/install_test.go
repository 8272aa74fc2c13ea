package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	synctargetctrl "github.com/heaven-dev/heaven/pkg/controllers/synctarget"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/pkg/syncer"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// installHeartbeat is the SyncTarget's heartbeat interval in the test: the
// target is not Ready 3 intervals after the syncer stops.
const installHeartbeat = 2 * time.Second

// TestInstall drives heaven-server's cluster controller against a real
// physical cluster: a SyncTarget in root with a kubeconfig Secret gets its
// syncer installed; the syncer, run here exactly as installed (the
// Secret's kubeconfig, the Deployment's args, the ServiceAccount's RBAC),
// syncs and heartbeats; its credential reaches its heaven only; a stopped
// syncer makes the target not Ready; deleting the SyncTarget uninstalls
// everything.
func TestInstall(t *testing.T) {
	phys := framework.StartCluster(t, "phys")
	hs := framework.StartHeavenServer(t, nil)
	const heaven, target, ns = "team-i", "phys-i", "demo"
	resources := []string{"configmaps", "deployments.apps"}
	e := &syncEnv{t: t, hs: hs, phys: phys, heaven: heaven, target: target, ns: ns,
		up: hs.Kube(heaven), upDyn: hs.Dynamic(heaven), down: phys.Client(), downDyn: dynamic.NewForConfigOrDie(phys.RESTConfig()),
		downNS: syncer.DownstreamNamespace(heaven, target, ns)}
	root := hs.Kube(server.RootHeaven)
	ctx := t.Context()

	// The heaven's object to sync, and in root the cluster's kubeconfig
	// and the SyncTarget.
	_, err := e.up.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	e.createConfigMap("app-config", true, map[string]string{"color": "blue"})
	kubeconfig, err := os.ReadFile(phys.Kubeconfig)
	require.NoError(t, err)
	_, err = root.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = root.CoreV1().Secrets("clusters").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: target},
		Data:       map[string][]byte{"config": kubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	createSyncTarget(t, hs, &v1alpha1.SyncTarget{
		ObjectMeta: metav1.ObjectMeta{Name: target},
		Spec: v1alpha1.SyncTargetSpec{
			Heaven:              heaven,
			KubeconfigSecretRef: &v1alpha1.SecretKeyReference{Namespace: "clusters", Name: target, Key: "config"},
			Resources:           resources,
			HeartbeatInterval:   &metav1.Duration{Duration: installHeartbeat},
		},
	})

	installNS := install.Namespace(target)
	var secret *corev1.Secret
	var args []string
	t.Run("the controller installs the syncer", func(t *testing.T) {
		st := e.waitSyncTarget("Installed", func(st *v1alpha1.SyncTarget) error {
			c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetInstalled)
			return expect(c != nil && c.Status == metav1.ConditionTrue, "Installed %+v", c)
		})
		assert.Contains(t, st.Finalizers, v1alpha1.SyncTargetFinalizer)
		ready := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetReady)
		require.NotNil(t, ready)
		assert.Equal(t, metav1.ConditionFalse, ready.Status, "no syncer runs yet")
		assert.Equal(t, synctargetctrl.ReasonHeartbeatStale, ready.Reason)

		down := e.down
		nsObj, err := down.CoreV1().Namespaces().Get(ctx, installNS, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, target, nsObj.Labels[install.InstanceLabel])
		_, err = down.CoreV1().ServiceAccounts(installNS).Get(ctx, install.ServiceAccountName, metav1.GetOptions{})
		require.NoError(t, err)
		role, err := down.RbacV1().ClusterRoles().Get(ctx, installNS, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, install.Rules(resources), role.Rules, "RBAC limited to the resources")
		binding, err := down.RbacV1().ClusterRoleBindings().Get(ctx, installNS, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, installNS, binding.RoleRef.Name)
		require.Len(t, binding.Subjects, 1)
		assert.Equal(t, install.ServiceAccountName, binding.Subjects[0].Name)
		assert.Equal(t, installNS, binding.Subjects[0].Namespace)

		secret, err = down.CoreV1().Secrets(installNS).Get(ctx, install.SecretName, metav1.GetOptions{})
		require.NoError(t, err)
		cred, err := install.ParseKubeconfig(secret.Data[install.KubeconfigKey])
		require.NoError(t, err)
		assert.Equal(t, hs.URL()+server.ClustersPrefix+heaven, cred.Server)
		certs, err := certutil.ParseCertsPEM(cred.CertPEM)
		require.NoError(t, err)
		assert.Equal(t, pki.SyncerUser(heaven, target), certs[0].Subject.CommonName)

		d, err := down.AppsV1().Deployments(installNS).Get(ctx, install.DeploymentName, metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, d.Spec.Template.Spec.Containers, 1)
		c := d.Spec.Template.Spec.Containers[0]
		assert.Equal(t, install.DefaultImage, c.Image)
		assert.Equal(t, install.ServiceAccountName, d.Spec.Template.Spec.ServiceAccountName)
		assert.Equal(t, install.SecretName, d.Spec.Template.Spec.Volumes[0].Secret.SecretName)
		args = c.Args
		assert.Contains(t, args, "--upstream-kubeconfig="+install.KubeconfigDir+"/"+install.KubeconfigKey)
		managers := map[string]bool{}
		for _, f := range d.ManagedFields {
			managers[f.Manager] = true
		}
		assert.True(t, managers[synctargetctrl.FieldManager], "applied by %v", managers)

		// The pod spec passes the namespace's restricted Pod Security
		// level: kube-controller-manager creates the Pod (which stays
		// Pending: the cluster has no nodes).
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			pods, err := down.CoreV1().Pods(installNS).List(ctx, metav1.ListOptions{})
			require.NoError(c, err)
			assert.Truef(c, len(pods.Items) == 1, "%d pods", len(pods.Items))
		}, syncTimeout, syncTick, "the syncer's Pod created")
	})
	require.NotNil(t, secret, "nothing installed")

	// The syncer as installed: the Secret's kubeconfig upstream, the
	// ServiceAccount's token downstream, the Deployment's args.
	dir := t.TempDir()
	upPath := filepath.Join(dir, "heaven.kubeconfig")
	require.NoError(t, os.WriteFile(upPath, secret.Data[install.KubeconfigKey], 0o600))
	downPath := e.serviceAccountKubeconfig(installNS, install.ServiceAccountName, filepath.Join(dir, "cluster.kubeconfig"))
	o := syncer.NewOptions()
	fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	assert.Equal(t, target, o.SyncTarget)
	assert.Equal(t, heaven, o.Heaven)
	assert.Equal(t, resources, o.Resources)
	// What differs outside the pod: where the Secret is mounted, the
	// in-cluster configuration, a free port.
	o.UpstreamKubeconfig, o.DownstreamKubeconfig, o.MetricsBindAddress = upPath, downPath, "127.0.0.1:0"
	run := e.runSyncer(o)

	t.Run("the installed syncer syncs and heartbeats: Ready", func(t *testing.T) {
		e.waitDownstreamConfigMap("app-config", func(cm *corev1.ConfigMap) error {
			return expect(cm.Data["color"] == "blue", "data %v", cm.Data)
		})
		e.waitSyncTarget("Ready", func(st *v1alpha1.SyncTarget) error {
			c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetReady)
			return expect(c != nil && c.Status == metav1.ConditionTrue, "Ready %+v, heartbeat %v", c, st.Status.LastSyncerHeartbeatTime)
		})
	})

	t.Run("its ServiceAccount may do what it syncs and no more", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", downPath)
		require.NoError(t, err)
		sa := kubernetes.NewForConfigOrDie(cfg)
		_, err = sa.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		assert.NoError(t, err)
		_, err = sa.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "secrets: %v", err)
		_, err = sa.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "clusterroles: %v", err)
	})

	t.Run("its credential reaches its heaven and nothing else", func(t *testing.T) {
		cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[install.KubeconfigKey])
		require.NoError(t, err)
		_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		other := rest.CopyConfig(cfg)
		other.Host = hs.URL() + server.ClustersPrefix + "team-other"
		_, err = kubernetes.NewForConfigOrDie(other).CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "another heaven: %v", err)
		rootCfg := rest.CopyConfig(cfg)
		rootCfg.Host = hs.URL() + server.ClustersPrefix + server.RootHeaven
		_, err = kubernetes.NewForConfigOrDie(rootCfg).CoreV1().Secrets("clusters").Get(ctx, target, metav1.GetOptions{})
		assert.True(t, apierrors.IsForbidden(err), "root's secrets: %v", err)
		_, err = dynamic.NewForConfigOrDie(rootCfg).Resource(v1alpha1.SyncTargetsResource).Get(ctx, target, metav1.GetOptions{})
		assert.NoError(t, err, "its own SyncTarget")
	})

	t.Run("a stopped syncer makes the target not Ready", func(t *testing.T) {
		run.stop(t)
		stopped := time.Now()
		st := e.waitSyncTarget("Ready=False", func(st *v1alpha1.SyncTarget) error {
			c := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetReady)
			return expect(c != nil && c.Status == metav1.ConditionFalse, "Ready %+v", c)
		})
		took := time.Since(stopped)
		t.Logf("not Ready %v after the syncer stopped", took.Round(100*time.Millisecond))
		assert.Less(t, took, v1alpha1.HeartbeatStaleAfter*installHeartbeat+5*time.Second, "noticed within 3 heartbeat intervals (and slack)")
		assert.Equal(t, synctargetctrl.ReasonHeartbeatStale, meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetReady).Reason)
		assert.False(t, meta.IsStatusConditionTrue(st.Status.Conditions, v1alpha1.SyncTargetSyncerHeartbeat))
	})

	t.Run("deleting the SyncTarget uninstalls everything and releases the heaven's objects", func(t *testing.T) {
		up, err := e.up.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{})
		require.NoError(t, err)
		require.Contains(t, up.Finalizers, v1alpha1.SyncerFinalizer(target), "the syncer held it")

		require.NoError(t, hs.Dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource).Delete(ctx, target, metav1.DeleteOptions{}))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			_, err := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource).Get(ctx, target, metav1.GetOptions{})
			assertNotFound(c, err)
		}, syncTimeout, syncTick, "the SyncTarget gone")
		for what, get := range map[string]func(context.Context) error{
			"namespace " + installNS: func(ctx context.Context) error {
				_, err := e.down.CoreV1().Namespaces().Get(ctx, installNS, metav1.GetOptions{})
				return err
			},
			"clusterrole": func(ctx context.Context) error {
				_, err := e.down.RbacV1().ClusterRoles().Get(ctx, installNS, metav1.GetOptions{})
				return err
			},
			"clusterrolebinding": func(ctx context.Context) error {
				_, err := e.down.RbacV1().ClusterRoleBindings().Get(ctx, installNS, metav1.GetOptions{})
				return err
			},
			"synced namespace " + e.downNS: func(ctx context.Context) error {
				_, err := e.down.CoreV1().Namespaces().Get(ctx, e.downNS, metav1.GetOptions{})
				return err
			},
		} {
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assertNotFound(c, get(t.Context()))
			}, syncTimeout, syncTick, what+" gone from the physical cluster")
		}
		up, err = e.up.CoreV1().ConfigMaps(ns).Get(ctx, "app-config", metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotContains(t, up.Finalizers, v1alpha1.SyncerFinalizer(target), "released")
		require.NoError(t, e.up.CoreV1().ConfigMaps(ns).Delete(ctx, "app-config", metav1.DeleteOptions{}))
		e.waitUpstreamGone(corev1.SchemeGroupVersion.WithResource("configmaps"), "app-config")
	})
}

// serviceAccountKubeconfig writes a kubeconfig for the physical cluster
// with a token of a ServiceAccount (what the syncer has in its pod) as path.
func (e *syncEnv) serviceAccountKubeconfig(namespace, name, path string) string {
	e.t.Helper()
	tr, err := e.down.CoreV1().ServiceAccounts(namespace).CreateToken(e.t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	require.NoError(e.t, err)
	admin, err := clientcmd.LoadFromFile(e.phys.Kubeconfig)
	require.NoError(e.t, err)
	cluster := admin.Clusters[admin.Contexts[admin.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthorityData: cluster.CertificateAuthorityData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	require.NoError(e.t, clientcmd.WriteToFile(*cfg, path))
	return path
}
