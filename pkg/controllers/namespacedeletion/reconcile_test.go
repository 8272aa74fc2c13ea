package namespacedeletion

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var configMaps = resource{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, deleteCollection: true}

func TestReconcile(t *testing.T) {
	now := metav1.Now()
	terminating := corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}},
	}
	active := *terminating.DeepCopy()
	active.DeletionTimestamp = nil
	finalized := *terminating.DeepCopy()
	finalized.Spec.Finalizers = []corev1.FinalizerName{"example.com/x"}

	tests := []struct {
		name          string
		ns            corev1.Namespace
		discoverErr   error
		remaining     int
		wantDeletes   int
		wantFinalized bool
		wantErr       bool
		wantRemaining bool
	}{
		{name: "active namespace is left alone", ns: active},
		{name: "already finalized namespace is left alone", ns: finalized},
		{name: "empty namespace is finalized", ns: terminating, wantDeletes: 1, wantFinalized: true},
		{name: "remaining objects wait", ns: terminating, remaining: 2, wantDeletes: 1, wantErr: true, wantRemaining: true},
		{name: "partial discovery deletes but does not finalize", ns: terminating,
			discoverErr: errors.New("group x unavailable"), wantDeletes: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deletes := 0
			var finalizedNS *corev1.Namespace
			r := &reconciler{
				discover: func(context.Context) ([]resource, error) { return []resource{configMaps}, tt.discoverErr },
				deleteAll: func(_ context.Context, res resource, namespace string) (int, error) {
					assert.Equal(t, configMaps, res)
					assert.Equal(t, "team", namespace)
					deletes++
					return tt.remaining, nil
				},
				finalize: func(_ context.Context, ns *corev1.Namespace) error {
					finalizedNS = ns
					return nil
				},
			}
			err := r.reconcile(context.Background(), tt.ns.DeepCopy())
			assert.Equal(t, tt.wantErr, err != nil, "%v", err)
			var remaining *contentRemainingError
			assert.Equal(t, tt.wantRemaining, errors.As(err, &remaining))
			assert.Equal(t, tt.wantDeletes, deletes)
			assert.Equal(t, tt.wantFinalized, finalizedNS != nil)
			if finalizedNS != nil {
				assert.Equal(t, []corev1.FinalizerName{"example.com/x"}, finalizedNS.Spec.Finalizers)
			}
		})
	}
}

func TestReconcileReportsFinalizeError(t *testing.T) {
	now := metav1.Now()
	r := &reconciler{
		discover:  func(context.Context) ([]resource, error) { return nil, nil },
		deleteAll: func(context.Context, resource, string) (int, error) { return 0, nil },
		finalize:  func(context.Context, *corev1.Namespace) error { return errors.New("conflict") },
	}
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "team", DeletionTimestamp: &now},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
	}
	assert.ErrorContains(t, r.reconcile(context.Background(), ns), "conflict")
}
