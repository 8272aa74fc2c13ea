package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/controllerheaven"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestControllerHeaven: a ControllerHeaven in root gets its controller a
// heaven forked from main, merges both ways, and its Deployment in a
// physical cluster with a kubeconfig for that heaven only; what the
// controller writes reaches main; deleting the ControllerHeaven uninstalls
// it and keeps the heaven.
func TestControllerHeaven(t *testing.T) {
	phys := framework.StartCluster(t, "phys")
	hs := framework.StartHeavenServer(t, nil)
	ctx := t.Context()
	root := hs.Kube(server.RootHeaven)
	heavens := versioned.NewForConfigOrDie(hs.RESTConfig(server.RootHeaven)).HeavenV1alpha1()

	hs.Kubectl(t, server.RootHeaven, `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"main"}}`, "apply", "-f", "-")
	waitHeaven(t, hs, "main")
	_, err := hs.Kube("main").CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	kubeconfig, err := os.ReadFile(phys.Kubeconfig)
	require.NoError(t, err)
	_, err = root.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "clusters"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = root.CoreV1().Secrets("clusters").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "phys"}, Data: map[string][]byte{"config": kubeconfig}}, metav1.CreateOptions{})
	require.NoError(t, err)
	createSyncTarget(t, hs, &v1alpha1.SyncTarget{
		ObjectMeta: metav1.ObjectMeta{Name: "phys"},
		Spec: v1alpha1.SyncTargetSpec{Heaven: "main",
			KubeconfigSecretRef: &v1alpha1.SecretKeyReference{Namespace: "clusters", Name: "phys", Key: "config"}},
	})

	_, err = heavens.ControllerHeavens().Create(ctx, &v1alpha1.ControllerHeaven{
		ObjectMeta: metav1.ObjectMeta{Name: "ctrl"},
		Spec: v1alpha1.ControllerHeavenSpec{
			Fork: "main", SyncTarget: "phys", Resources: []string{"core/configmaps"},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "controller", Image: "example.com/controller:1", Args: []string{"--leader-elect=false"}}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ch, err := heavens.ControllerHeavens().Get(ctx, "ctrl", metav1.GetOptions{})
		require.NoError(c, err)
		ready := meta.FindStatusCondition(ch.Status.Conditions, "Ready")
		require.NotNil(c, ready)
		assert.Equal(c, metav1.ConditionTrue, ready.Status, "%s: %s", ready.Reason, ready.Message)
	}, 2*time.Minute, 200*time.Millisecond, "the ControllerHeaven Ready")

	// Its heaven can't be swapped for another, not even from the default.
	ch, err := heavens.ControllerHeavens().Get(ctx, "ctrl", metav1.GetOptions{})
	require.NoError(t, err)
	ch.Spec.Heaven = "elsewhere"
	_, err = heavens.ControllerHeavens().Update(ctx, ch, metav1.UpdateOptions{})
	assert.True(t, apierrors.IsInvalid(err), "changing spec.heaven: %v", err)

	// Its heaven: a fork of main, owned by the controller (and by who asked).
	h, err := heavens.Heavens().Get(ctx, "ctrl", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, h.Spec.Fork)
	assert.Equal(t, "main", h.Spec.Fork.Heaven)
	assert.Contains(t, h.Spec.Owners, v1alpha1.ControllerUser("ctrl"))
	assert.Equal(t, pki.AdminUser, h.Annotations[v1alpha1.CreatedByAnnotation], "made as who asked, not as heaven-server")
	for _, m := range []string{v1alpha1.MergeInName("ctrl"), v1alpha1.MergeOutName("ctrl")} {
		_, err := heavens.AutomatedMerges().Get(ctx, m, metav1.GetOptions{})
		require.NoError(t, err, "AutomatedMerge %s", m)
	}

	// In the physical cluster: the Deployment with the kubeconfig mounted.
	ns := controllerheaven.Namespace("ctrl")
	d, err := phys.Client().AppsV1().Deployments(ns).Get(ctx, "ctrl", metav1.GetOptions{})
	require.NoError(t, err)
	container := d.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "example.com/controller:1", container.Image)
	assert.Contains(t, container.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: v1alpha1.ControllerKubeconfigPath})
	require.Len(t, container.VolumeMounts, 1)
	assert.Equal(t, "/etc/heaven", container.VolumeMounts[0].MountPath)
	secret, err := phys.Client().CoreV1().Secrets(ns).Get(ctx, controllerheaven.SecretName, metav1.GetOptions{})
	require.NoError(t, err)

	// The controller, with exactly that kubeconfig: its heaven is its whole
	// world (main's ConfigMap came in), what it writes goes out to main,
	// and main itself is closed to it.
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[controllerheaven.KubeconfigKey])
	require.NoError(t, err)
	controller := kubernetes.NewForConfigOrDie(cfg)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm, err := controller.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, "fast", cm.Data["mode"])
	}, time.Minute, 100*time.Millisecond, "main's ConfigMap in the controller's heaven")
	_, err = controller.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "report"}, Data: map[string]string{"from": "controller"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cm, err := hs.Kube("main").CoreV1().ConfigMaps("default").Get(ctx, "report", metav1.GetOptions{})
		require.NoError(c, err)
		assert.Equal(c, "controller", cm.Data["from"])
	}, time.Minute, 100*time.Millisecond, "the controller's ConfigMap in main")
	mainCfg := *cfg
	mainCfg.Host = hs.HeavenURL("main")
	_, err = kubernetes.NewForConfigOrDie(&mainCfg).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the controller's credential in main: %v", err)

	// Who may create ControllerHeavens in root but holds nothing in main
	// can't have one fork main, merge into it or use the cluster.
	_, err = root.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "controllerheavens"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupName}, Resources: []string{"controllerheavens"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = root.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "controllerheavens"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	ca, err := pki.LoadCA(filepath.Join(hs.DataDir, "pki"))
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.IssueClientCert("alice", nil, time.Hour)
	require.NoError(t, err)
	alice := versioned.NewForConfigOrDie(&rest.Config{Host: hs.HeavenURL(server.RootHeaven),
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CAPEM(), CertData: certPEM, KeyData: keyPEM}})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err = alice.HeavenV1alpha1().ControllerHeavens().Create(ctx, &v1alpha1.ControllerHeaven{
			ObjectMeta: metav1.ObjectMeta{Name: "alices"},
			Spec: v1alpha1.ControllerHeavenSpec{Fork: "main", SyncTarget: "phys",
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}},
		}, metav1.CreateOptions{})
		require.Error(c, err)
		assert.True(c, apierrors.IsForbidden(err), "%v", err)
		assert.Contains(c, err.Error(), "in heaven main")
	}, time.Minute, 200*time.Millisecond, "alice's ControllerHeaven refused") // RBAC caches catch up

	// Deleted: uninstalled, merges gone, the heaven kept.
	require.NoError(t, heavens.ControllerHeavens().Delete(ctx, "ctrl", metav1.DeleteOptions{}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := heavens.ControllerHeavens().Get(ctx, "ctrl", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "ControllerHeaven: %v", err)
		_, err = heavens.AutomatedMerges().Get(ctx, v1alpha1.MergeInName("ctrl"), metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "AutomatedMerge: %v", err)
		n, err := phys.Client().CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err) || (err == nil && n.DeletionTimestamp != nil), "namespace %s: %v", ns, err)
	}, time.Minute, 200*time.Millisecond, "the ControllerHeaven uninstalled")
	_, err = heavens.Heavens().Get(ctx, "ctrl", metav1.GetOptions{})
	assert.NoError(t, err, "the controller's heaven stays")
	_, err = controller.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsUnauthorized(err), "the controller's credential after its ControllerHeaven is gone: %v", err)
}
