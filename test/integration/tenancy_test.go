package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/server"
)

// TestOnlyAdministratorsCreateHeavensOnFirstUse: naming a heaven that does
// not exist creates it for server administrators only; anybody else gets
// 403 and no branch.
func TestOnlyAdministratorsCreateHeavensOnFirstUse(t *testing.T) {
	ts := startServer(t, "", nil)
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}

	alice := kubernetes.NewForConfigOrDie(ts.scopedConfig("new-by-alice", "alice", "dev"))
	_, err := alice.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
	require.Contains(t, err.Error(), "only administrators create heavens on first use")
	require.NotContains(t, ts.git("branch", "--list"), "new-by-alice", "no branch")

	admin := kubernetes.NewForConfigOrDie(ts.scopedConfig("new-by-admin", "bob", server.AdministratorsGroup))
	_, err = admin.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err, "a member of %s creates it", server.AdministratorsGroup)

	// Once it exists, others reach it with what its RBAC grants them.
	aliceThere := kubernetes.NewForConfigOrDie(ts.scopedConfig("new-by-admin", "alice", "dev")).CoreV1().ConfigMaps("default")
	_, err = aliceThere.Get(ctx, "x", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "want 403 before a binding, got %v", err)
	ts.kubectl("new-by-admin", "", "create", "rolebinding", "dev-view", "--clusterrole=view", "--group=dev", "-n", "default")
	eventually(t, 10*time.Second, "dev's binding in effect", func() (bool, error) {
		_, err := aliceThere.Get(ctx, "x", metav1.GetOptions{})
		return err == nil, nil
	})
	require.True(t, strings.Contains(ts.git("branch", "--list"), "new-by-admin"))
}

// TestObjectsPerHeavenAreBounded: a tenant can't fill a heaven (and the
// server's memory) beyond --max-objects-per-heaven; an administrator can.
func TestObjectsPerHeavenAreBounded(t *testing.T) {
	ts := startServer(t, "", func(o *server.Options) { o.MaxObjectsPerHeaven = 12 })
	ctx := t.Context()
	ts.kubectl("team-a", "", "create", "rolebinding", "alice-edits", "--clusterrole=edit", "--user=alice")
	alice := kubernetes.NewForConfigOrDie(ts.scopedConfig("team-a", "alice")).CoreV1().ConfigMaps("default")
	var err error
	eventually(t, 10*time.Second, "alice may create configmaps", func() (bool, error) {
		_, err = alice.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first"}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	created := 1
	for ; created < 20; created++ {
		_, err = alice.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", created)}}, metav1.CreateOptions{})
		if err != nil {
			break
		}
	}
	require.True(t, apierrors.IsForbidden(err), "want 403 once the heaven is full, got %v", err)
	require.Contains(t, err.Error(), "heaven team-a holds 12 objects")
	require.Less(t, created, 12, "the heaven's namespaces and binding count too")
	_, err = ts.kube("team-a").CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "admins"}}, metav1.CreateOptions{})
	require.NoError(t, err, "administrators are not bound")
}
