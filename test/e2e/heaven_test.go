package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

const (
	// syncTimeout bounds every wait of the syncer tests.
	syncTimeout = 90 * time.Second
	// syncTick is how often their conditions are checked.
	syncTick = 100 * time.Millisecond
)

// writeKubeconfig writes a kubeconfig for heaven with the admin's
// credentials, every cluster of it pointing at /clusters/<heaven>, as a
// syncer's --upstream-kubeconfig, and returns its path.
func writeKubeconfig(t *testing.T, hs *framework.HeavenServer, heaven string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), heaven+".kubeconfig")
	require.NoError(t, hs.WriteKubeconfig(heaven, path))
	return path
}

// createSyncTarget creates a SyncTarget in root, once root serves them
// (heaven-server installs its CRDs one after the other). It is the one
// place that knows where SyncTargets live.
func createSyncTarget(t *testing.T, hs *framework.HeavenServer, st *v1alpha1.SyncTarget) {
	t.Helper()
	st.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	require.NoError(t, err)
	client := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err = client.Create(t.Context(), &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
		assert.False(c, apierrors.IsNotFound(err), "root does not serve SyncTargets yet: %v", err)
	}, syncTimeout, syncTick, "SyncTarget %s created", st.Name)
	require.NoError(t, err, "creating SyncTarget %s", st.Name)
}

// createCRD creates crd (if missing) and waits until it is established.
func createCRD(t *testing.T, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	_, err := crdClient.Create(t.Context(), crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, crdEstablished(t.Context(), client, crd.Name))
	}, syncTimeout, syncTick, "CRD %s established", crd.Name)
}

// crdEstablished returns an error until CRD name is established.
func crdEstablished(ctx context.Context, client apiextensionsclient.Interface, name string) error {
	got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range got.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return nil
		}
	}
	return fmt.Errorf("CRD %s not established: conditions %+v", name, got.Status.Conditions)
}

// assertNotFound checks that a get found nothing.
func assertNotFound(t assert.TestingT, err error) bool {
	return assert.True(t, apierrors.IsNotFound(err), "want NotFound, got %v", err)
}
