package integration

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestStoreErrorsAreStatuses: what the store refuses reaches clients as a
// Kubernetes Status with the right code and words to act on, never as an
// "rpc error".
func TestStoreErrorsAreStatuses(t *testing.T) {
	ts := startServer(t, "", nil)
	ctx := t.Context()
	kube := ts.kube("errors")

	t.Run("a CRD with a 2 MB schema: 413 with the limit", func(t *testing.T) {
		props := map[string]any{}
		for i := range 20000 {
			props[fmt.Sprintf("field%05d", i)] = map[string]any{"type": "string", "description": strings.Repeat("d", 80)}
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": "huges.example.com"},
			"spec": map[string]any{"group": "example.com", "scope": "Namespaced",
				"names": map[string]any{"plural": "huges", "singular": "huge", "kind": "Huge"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": props}}}}},
		}}
		_, err := ts.dynamic("errors").Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			Create(ctx, crd, metav1.CreateOptions{})
		require.Error(t, err)
		require.True(t, apierrors.IsRequestEntityTooLargeError(err), "want 413, got %v", err)
		require.Contains(t, err.Error(), "1572864 bytes")
		require.NotContains(t, err.Error(), "rpc error")
	})

	t.Run("a custom resource over the limit: 413", func(t *testing.T) {
		crd := ts.kubectl("errors", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: blobs.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: blobs, singular: blob, kind: Blob}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, "apply", "-f", "-")
		require.Contains(t, crd, "created")
		blobs := ts.dynamic("errors").Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "blobs"}).Namespace("default")
		blob := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Blob",
			"metadata": map[string]any{"name": "b"}, "data": strings.Repeat("y", 2<<20)}}
		var err error
		eventually(t, time.Minute, "the CRD served", func() (bool, error) {
			_, err = blobs.Create(ctx, blob, metav1.CreateOptions{})
			return !apierrors.IsNotFound(err), nil
		})
		require.True(t, apierrors.IsRequestEntityTooLargeError(err), "want 413, got %v", err)
	})

	t.Run("a branch moved to commits that can't be read: 503, then writes resume", func(t *testing.T) {
		_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		good := strings.TrimSpace(ts.git("rev-parse", "refs/heads/errors"))
		commit := fmt.Sprintf("tree %s\nparent %s\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\nbroken\n", strings.Repeat("ab", 20), good)
		cmd := exec.Command("git", "--git-dir", filepath.Join(ts.dataDir, "heavens.git"), "hash-object", "-t", "commit", "-w", "--literally", "--stdin")
		cmd.Stdin = strings.NewReader(commit)
		out, err := cmd.Output()
		require.NoError(t, err)
		ts.git("update-ref", "refs/heads/errors", strings.TrimSpace(string(out)))

		_, err = kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsServiceUnavailable(err), "want 503, got %v", err)
		require.Contains(t, err.Error(), "cannot be read")
		var status apierrors.APIStatus
		require.ErrorAs(t, err, &status)
		require.Equal(t, int32(http.StatusServiceUnavailable), status.Status().Code)
		require.NotNil(t, status.Status().Details)
		require.Positive(t, status.Status().Details.RetryAfterSeconds)
		_, err = kube.CoreV1().ConfigMaps("default").Get(ctx, "a", metav1.GetOptions{})
		require.NoError(t, err, "reads go on")

		ts.git("update-ref", "refs/heads/errors", good)
		eventually(t, time.Minute, "writes resume", func() (bool, error) {
			_, err := kube.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}}, metav1.CreateOptions{})
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
	})
}
