package namespace

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestPrepareForCreate(t *testing.T) {
	tests := []struct {
		name       string
		finalizers []corev1.FinalizerName
		want       []corev1.FinalizerName
	}{
		{"adds kubernetes", nil, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		{"keeps others", []corev1.FinalizerName{"example.com/x"}, []corev1.FinalizerName{"example.com/x", corev1.FinalizerKubernetes}},
		{"no duplicate", []corev1.FinalizerName{corev1.FinalizerKubernetes}, []corev1.FinalizerName{corev1.FinalizerKubernetes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "n"},
				Spec:       corev1.NamespaceSpec{Finalizers: tt.finalizers},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			}
			Strategy.PrepareForCreate(context.Background(), ns)
			assert.Equal(t, tt.want, ns.Spec.Finalizers)
			assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
		})
	}
}

func TestCanonicalizeSetsNameLabel(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{NameLabel: "other"}}}
	Strategy.Canonicalize(ns)
	assert.Equal(t, "n", ns.Labels[NameLabel])
}

// Each strategy keeps the parts it does not own from the stored object.
func TestPrepareForUpdateOwnership(t *testing.T) {
	tests := []struct {
		name     string
		strategy interface {
			PrepareForUpdate(context.Context, runtime.Object, runtime.Object)
		}
		wantSpec   bool
		wantStatus bool
	}{
		{"main keeps spec and status", Strategy, false, false},
		{"status takes status only", StatusStrategy, false, true},
		{"finalize takes spec only", FinalizeStrategy, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "n"},
				Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
			}
			ns := old.DeepCopy()
			ns.Spec.Finalizers = nil
			ns.Status.Phase = corev1.NamespaceTerminating
			tt.strategy.PrepareForUpdate(context.Background(), ns, old)
			assert.Equal(t, tt.wantSpec, len(ns.Spec.Finalizers) == 0, "spec taken")
			assert.Equal(t, tt.wantStatus, ns.Status.Phase == corev1.NamespaceTerminating, "status taken")
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		ns    corev1.Namespace
		valid bool
	}{
		{"plain", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, true},
		{"name not a DNS label", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team.a"}}, false},
		{"bad finalizer", corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"not a name"}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), &tt.ns)
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}

func TestStatusPhaseFollowsDeletion(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name     string
		deleting bool
		phase    corev1.NamespacePhase
		valid    bool
	}{
		{"active", false, corev1.NamespaceActive, true},
		{"terminating without deletion", false, corev1.NamespaceTerminating, false},
		{"terminating while deleted", true, corev1.NamespaceTerminating, true},
		{"active while deleted", true, corev1.NamespaceActive, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"}}
			if tt.deleting {
				old.DeletionTimestamp = &now
			}
			ns := old.DeepCopy()
			ns.Status.Phase = tt.phase
			errs := StatusStrategy.ValidateUpdate(context.Background(), ns, old)
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}
