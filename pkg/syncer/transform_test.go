package syncer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var testID = identity{heaven: "team-a", target: "east"}

func upstreamDeployment() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "demo", "uid": "u-1", "resourceVersion": "42", "generation": int64(3),
			"creationTimestamp": "2026-01-01T00:00:00Z", "finalizers": []any{"heaven.dev/syncer-east"},
			"ownerReferences": []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-0"}},
			"labels":          map[string]any{"app": "web", "heaven.dev/cluster": "east"},
			"annotations": map[string]any{
				"note": "kept", "kubectl.kubernetes.io/last-applied-configuration": "{}",
			},
		},
		"spec":   map[string]any{"replicas": int64(2)},
		"status": map[string]any{"replicas": int64(1)},
	}}
}

func TestDownstreamObjectKeepsSpecAndDropsWhatTheServerOwns(t *testing.T) {
	down := downstreamObject(testID, upstreamDeployment(), "heaven-1234")
	assert.Equal(t, "web", down.GetName())
	assert.Equal(t, "heaven-1234", down.GetNamespace())
	assert.Equal(t, map[string]any{"replicas": int64(2)}, down.Object["spec"])
	assert.NotContains(t, down.Object, "status")
	assert.Empty(t, down.GetUID())
	assert.Empty(t, down.GetResourceVersion())
	assert.Zero(t, down.GetGeneration())
	assert.Empty(t, down.GetFinalizers())
	assert.Empty(t, down.GetOwnerReferences())
	assert.NotContains(t, down.Object["metadata"], "creationTimestamp")
	assert.Equal(t, map[string]string{"app": "web", "heaven.dev/cluster": "east",
		HeavenLabel: "team-a", SyncTargetLabel: "east"}, down.GetLabels())
	a := down.GetAnnotations()
	assert.Equal(t, "kept", a["note"])
	assert.NotContains(t, a, "kubectl.kubernetes.io/last-applied-configuration")
	assert.Equal(t, "demo", a[UpstreamNamespaceAnnotation])
	assert.Equal(t, "3", a[UpstreamGenerationAnnotation])
	assert.NotEmpty(t, a[SpecHashAnnotation])
	assert.True(t, testID.owns(down))
}

func TestDownstreamHashIgnoresStatusAndServerMetadata(t *testing.T) {
	base := downstreamObject(testID, upstreamDeployment(), "ns")
	up := upstreamDeployment()
	up.SetResourceVersion("43")
	up.Object["status"] = map[string]any{"replicas": int64(2)}
	up.SetFinalizers(nil)
	assert.True(t, upToDate(base, downstreamObject(testID, up, "ns")))

	for name, change := range map[string]func(*unstructured.Unstructured){
		"spec":       func(u *unstructured.Unstructured) { u.Object["spec"] = map[string]any{"replicas": int64(3)} },
		"label":      func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"heaven.dev/cluster": "east"}) },
		"annotation": func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"note": "changed"}) },
	} {
		up := upstreamDeployment()
		change(up)
		assert.False(t, upToDate(base, downstreamObject(testID, up, "ns")), name)
	}
	assert.False(t, upToDate(&unstructured.Unstructured{Object: map[string]any{}}, base), "no hash downstream")
}

func TestUpstreamStatusTranslatesObservedGeneration(t *testing.T) {
	down := func(generation, observed int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"generation": generation, "annotations": map[string]any{UpstreamGenerationAnnotation: "7"}},
			"status":   map[string]any{"observedGeneration": observed, "replicas": int64(1)},
		}}
	}
	up := func(observed any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if observed != nil {
			u.Object["status"] = map[string]any{"observedGeneration": observed}
		}
		return u
	}
	st, ok := upstreamStatus(up(nil), down(2, 2))
	assert.True(t, ok)
	assert.Equal(t, map[string]any{"observedGeneration": int64(7), "replicas": int64(1)}, st, "observed: the heaven's generation")

	st, _ = upstreamStatus(up(int64(6)), down(2, 1))
	assert.Equal(t, int64(6), st["observedGeneration"], "not yet observed: keeps the heaven's previous value")

	st, _ = upstreamStatus(up(nil), down(2, 1))
	assert.NotContains(t, st, "observedGeneration")

	_, ok = upstreamStatus(up(nil), &unstructured.Unstructured{Object: map[string]any{}})
	assert.False(t, ok, "no status downstream: nothing to write")
}
