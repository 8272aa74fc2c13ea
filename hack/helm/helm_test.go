// Package helm_test installs a Helm chart of our own into a heaven through
// the Helm SDK. It is a module of its own: Helm's dependencies stay out of
// the main module.
package helm_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

var gadgets = schema.GroupVersionResource{Group: "shop.example.com", Version: "v1", Resource: "gadgets"}

// TestChartInstallsIntoAGenericHeaven installs test/helm/shop (RBAC, a
// ServiceAccount, a ConfigMap, a Deployment, a CRD and one of its objects)
// into a generic heaven with the Helm SDK, upgrades it, and uninstalls it:
// every object as Helm wrote it, each a file of the heaven's branch, and
// nothing left after the uninstall but the CRD (Helm never deletes crds/).
func TestChartInstallsIntoAGenericHeaven(t *testing.T) {
	hs := framework.StartHeavenServer(t, nil)
	const heaven, ns = "apps", "shop"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, hs.WriteKubeconfig(heaven, kubeconfig))
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &kubeconfig, ptr(ns)
	cfg := new(action.Configuration)
	require.NoError(t, cfg.Init(flags, ns, "secret", t.Logf))
	chart, err := loader.Load(filepath.Join("..", "..", "test", "helm", "shop"))
	require.NoError(t, err)

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = "shop", ns, true
	install.Timeout = time.Minute
	rel, err := install.Run(chart, map[string]any{"color": "blue"})
	require.NoError(t, err)
	assert.Equal(t, 1, rel.Version)

	kube, dyn := hs.Kube(heaven), hs.Dynamic(heaven)
	ctx := t.Context()
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "shop-settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "blue", cm.Data["color"])
	d, err := kube.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "shop", d.Spec.Template.Spec.ServiceAccountName)
	_, err = kube.CoreV1().ServiceAccounts(ns).Get(ctx, "shop", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().Roles(ns).Get(ctx, "shop-reader", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = kube.RbacV1().RoleBindings(ns).Get(ctx, "shop-reader", metav1.GetOptions{})
	require.NoError(t, err)
	g, err := dyn.Resource(gadgets).Namespace(ns).Get(ctx, "shop-counter", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 3, g.Object["spec"].(map[string]any)["size"])
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=shop"})
	require.NoError(t, err)
	assert.Len(t, secrets.Items, 1, "the release, as Helm stores it")
	files := hs.Git(t, "ls-tree", "-r", "--name-only", heaven)
	for _, f := range []string{"core/configmaps/shop/shop-settings.json", "apps/deployments/shop/shop.json",
		"rbac.authorization.k8s.io/roles/shop/shop-reader.json", "shop.example.com/gadgets/shop/shop-counter.json",
		"apiextensions.k8s.io/customresourcedefinitions/gadgets.shop.example.com.json"} {
		assert.Contains(t, files, f)
	}

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = ns
	rel, err = upgrade.Run("shop", chart, map[string]any{"color": "red"})
	require.NoError(t, err)
	assert.Equal(t, 2, rel.Version)
	cm, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "shop-settings", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "red", cm.Data["color"])

	uninstall := action.NewUninstall(cfg)
	uninstall.Wait, uninstall.Timeout = true, time.Minute
	_, err = uninstall.Run("shop")
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "shop-settings", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "config map: %v", err)
		_, err = kube.AppsV1().Deployments(ns).Get(ctx, "shop", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "deployment: %v", err)
		_, err = kube.RbacV1().Roles(ns).Get(ctx, "shop-reader", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "role: %v", err)
		_, err = dyn.Resource(gadgets).Namespace(ns).Get(ctx, "shop-counter", metav1.GetOptions{})
		assert.True(c, apierrors.IsNotFound(err), "gadget: %v", err)
		secrets, err := kube.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=shop"})
		assert.NoError(c, err)
		assert.Empty(c, secrets.Items, "release records")
	}, time.Minute, 100*time.Millisecond)
	crds := hs.Git(t, "ls-tree", "-r", "--name-only", heaven, "apiextensions.k8s.io/")
	assert.True(t, strings.Contains(crds, "gadgets.shop.example.com"), "the CRD stays")
}

func ptr[T any](v T) *T { return &v }
