package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
)

// TestDeletedSyncTargetCredentialIsRevoked: once its SyncTarget is deleted,
// a syncer's credential gets 401 everywhere, although it would be valid for
// a long time; a SyncTarget created again under the same name gets a
// credential that works.
func TestDeletedSyncTargetCredentialIsRevoked(t *testing.T) {
	ts := startServer(t, "", nil)
	ctx := t.Context()
	targets := ts.dynamic("root").Resource(v1alpha1.SyncTargetsResource)
	create := func() {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v1alpha1.SyncTarget{
			TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"},
			ObjectMeta: metav1.ObjectMeta{Name: "gone"},
			Spec:       v1alpha1.SyncTargetSpec{Heaven: "team-a"},
		})
		require.NoError(t, err)
		eventually(t, time.Minute, "the SyncTarget created", func() (bool, error) {
			_, err := targets.Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
			return err == nil, err
		})
	}
	// The heaven exists before its syncer comes: only administrators
	// create heavens on first use.
	_, err := ts.kube("team-a").CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	create()
	syncer := kubernetes.NewForConfigOrDie(ts.scopedConfig("team-a", pki.SyncerUser("team-a", "gone"), pki.SyncerGroup))
	_, err = syncer.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	eventually(t, time.Minute, "the cluster controller's finalizer", func() (bool, error) {
		u, err := targets.Get(ctx, "gone", metav1.GetOptions{})
		return err == nil && len(u.GetFinalizers()) > 0, err
	})

	require.NoError(t, targets.Delete(ctx, "gone", metav1.DeleteOptions{}))
	eventually(t, time.Minute, "the SyncTarget gone", func() (bool, error) {
		_, err := targets.Get(ctx, "gone", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	_, err = syncer.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsUnauthorized(err), "a revoked credential gets 401: %v", err)

	// Certificates have one-second resolution: the new credential must be
	// issued in a later second than the revocation.
	time.Sleep(time.Second)
	create()
	renewed := kubernetes.NewForConfigOrDie(ts.scopedConfig("team-a", pki.SyncerUser("team-a", "gone"), pki.SyncerGroup))
	_, err = renewed.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "a credential issued after the revocation works")
}
