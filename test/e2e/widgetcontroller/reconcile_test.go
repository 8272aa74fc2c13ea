package widgetcontroller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

func widget(size, generation int64, status map[string]any) *unstructured.Unstructured {
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "default", "generation": generation},
		"spec":     map[string]any{"size": size},
	}}
	if status != nil {
		w.Object["status"] = status
	}
	return w
}

// controller is a Controller over one cached object (nil: not found) that
// records its status writes.
func controller(cached *unstructured.Unstructured, written *[]*unstructured.Unstructured) *Controller {
	return &Controller{
		get: func(n cache.ObjectName) (*unstructured.Unstructured, error) {
			if cached == nil {
				return nil, apierrors.NewNotFound(Resource.GroupResource(), n.Name)
			}
			return cached, nil
		},
		updateStatus: func(_ context.Context, w *unstructured.Unstructured) error {
			*written = append(*written, w)
			return nil
		},
	}
}

func TestReconcileReportsSizePhaseAndGeneration(t *testing.T) {
	cached := widget(3, 2, map[string]any{"extra": "kept"})
	before := cached.DeepCopy()
	var written []*unstructured.Unstructured
	c := controller(cached, &written)
	require.NoError(t, c.reconcile(t.Context(), cache.ObjectName{Namespace: "default", Name: "w"}))
	require.Len(t, written, 1)
	assert.Equal(t, Status{ObservedSize: 3, Phase: PhaseReady, ObservedGeneration: 2}, StatusOf(written[0]))
	assert.Equal(t, "kept", written[0].Object["status"].(map[string]any)["extra"], "other status fields are kept")
	assert.Equal(t, before, cached, "the cached object is not mutated")
	assert.EqualValues(t, 1, c.StatusWrites())
}

func TestReconcileWritesNothingWhenUpToDate(t *testing.T) {
	var written []*unstructured.Unstructured
	c := controller(widget(3, 2, map[string]any{"observedSize": int64(3), "phase": PhaseReady, "observedGeneration": int64(2)}), &written)
	require.NoError(t, c.reconcile(t.Context(), cache.ObjectName{Namespace: "default", Name: "w"}))
	assert.Empty(t, written)
}

// A merge may change spec.size without a new generation: the status is
// compared as a whole.
func TestReconcileFollowsASpecThatChangedWithoutANewGeneration(t *testing.T) {
	var written []*unstructured.Unstructured
	c := controller(widget(10, 2, map[string]any{"observedSize": int64(20), "phase": PhaseReady, "observedGeneration": int64(2)}), &written)
	require.NoError(t, c.reconcile(t.Context(), cache.ObjectName{Namespace: "default", Name: "w"}))
	require.Len(t, written, 1)
	assert.EqualValues(t, 10, StatusOf(written[0]).ObservedSize)
}

func TestReconcileOfAGoneWidgetIsDone(t *testing.T) {
	var written []*unstructured.Unstructured
	c := controller(nil, &written)
	require.NoError(t, c.reconcile(t.Context(), cache.ObjectName{Namespace: "default", Name: "w"}))
	assert.Empty(t, written)
}
