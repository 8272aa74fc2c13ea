package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestConflictingRefStaysInItsHeaven: a branch someone makes from outside
// (team/x) keeps heaven "team" from being created; requests to team end
// within seconds with a Status naming the ref, every other heaven keeps
// writing, and a restart works.
func TestConflictingRefStaysInItsHeaven(t *testing.T) {
	dataDir := t.TempDir()
	ts := startServer(t, dataDir, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, h := range []string{"alpha", "beta"} {
		_, err := ts.kube(h).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seed"}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	alphaWrites, alphaFailures := runWriters(ctx, t, ts.kube("alpha"), 1)
	betaWrites, betaFailures := runWriters(ctx, t, ts.kube("beta"), 1)

	root := strings.TrimSpace(ts.git("rev-parse", "refs/heads/alpha"))
	ts.git("update-ref", "refs/heads/team/x", root)
	teamFails := func() {
		t.Helper()
		began := time.Now()
		_, err := ts.kube("team").CoreV1().ConfigMaps("default").Create(context.Background(),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
		require.Error(t, err)
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status, "a Kubernetes Status")
		require.Contains(t, err.Error(), "refs/heads/team/x")
		require.Less(t, time.Since(began), 15*time.Second)
		t.Logf("team answers in %v: %v", time.Since(began).Round(time.Millisecond), err)
	}
	teamFails()
	teamFails() // and again, not a hang the second time

	eventually(t, 30*time.Second, "writes to the other heavens meanwhile", func() (bool, error) {
		return alphaWrites.Load() >= 2 && betaWrites.Load() >= 2, nil
	})
	// A restart works, and team still fails alone.
	cancel()
	require.Zero(t, alphaFailures.Load()+betaFailures.Load(), "the other heavens' writes all succeeded")
	require.Positive(t, alphaWrites.Load())
	require.Positive(t, betaWrites.Load())
	ts.stop()
	ts = startServer(t, dataDir, nil)
	teamFails()
	_, err := ts.kube("alpha").CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Without team/x, team can be created.
	ts.git("update-ref", "-d", "refs/heads/team/x")
	_, err = ts.kube("team").CoreV1().ConfigMaps("default").Create(context.Background(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	require.NoError(t, err)
}
