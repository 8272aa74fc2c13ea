package deployment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
)

func newDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
	scheme.Scheme.Default(d)
	return d
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		valid  bool
	}{
		{"defaulted deployment", func(*appsv1.Deployment) {}, true},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) }, false},
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil }, false},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} }, false},
		{"selector not matching template", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} }, false},
		{"no containers", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers = nil }, false},
		{"container without image", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = "" }, false},
		{"duplicate container names", func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, d.Spec.Template.Spec.Containers[0])
		}, false},
		{"restart policy Never", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever }, false},
		{"recreate with rolling update", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType }, false},
		{"recreate", func(d *appsv1.Deployment) {
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		}, true},
		{"surge and unavailable both zero", func(d *appsv1.Deployment) {
			zero := intstr.FromInt32(0)
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &zero}
		}, false},
		{"unavailable over 100%", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("150%"))
		}, false},
		{"progress deadline below min ready", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 600 }, false},
		{"bad name", func(d *appsv1.Deployment) { d.Name = "Web" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment()
			tt.mutate(d)
			errs := Strategy.Validate(context.Background(), d)
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}

func TestValidateUpdateSelectorImmutable(t *testing.T) {
	old := newDeployment()
	d := old.DeepCopy()
	d.Spec.Selector.MatchLabels["tier"] = "front"
	d.Spec.Template.Labels["tier"] = "front"
	assert.NotEmpty(t, Strategy.ValidateUpdate(context.Background(), d, old))
}

func TestPrepareForUpdate(t *testing.T) {
	tests := []struct {
		name     string
		strategy interface {
			PrepareForUpdate(context.Context, runtime.Object, runtime.Object)
		}
		changeSpec     bool
		wantReplicas   int32
		wantStatus     int32
		wantGeneration int64
	}{
		{"main resource, spec change bumps generation", Strategy, true, 5, 0, 2},
		{"main resource, status change ignored", Strategy, false, 1, 0, 1},
		{"status subresource ignores spec", StatusStrategy, true, 1, 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newDeployment()
			old.Generation = 1
			d := old.DeepCopy()
			d.Status.Replicas = 3
			if tt.changeSpec {
				d.Spec.Replicas = ptr.To[int32](5)
			}
			tt.strategy.PrepareForUpdate(context.Background(), d, old)
			assert.Equal(t, tt.wantReplicas, *d.Spec.Replicas)
			assert.Equal(t, tt.wantStatus, d.Status.Replicas)
			assert.Equal(t, tt.wantGeneration, d.Generation)
		})
	}
}

func TestPrepareForCreateClearsStatus(t *testing.T) {
	d := newDeployment()
	d.Status.Replicas = 3
	Strategy.PrepareForCreate(context.Background(), d)
	assert.Equal(t, appsv1.DeploymentStatus{}, d.Status)
	assert.Equal(t, int64(1), d.Generation)
}
