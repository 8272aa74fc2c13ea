package deployment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestScaleFromDeployment(t *testing.T) {
	d := newDeployment()
	d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}
	d.Status.Replicas = 2
	scale, err := ScaleFromDeployment(d)
	require.NoError(t, err)
	assert.Equal(t, int32(1), scale.Spec.Replicas)
	assert.Equal(t, int32(2), scale.Status.Replicas)
	assert.Equal(t, "app=web,tier", scale.Status.Selector)
	assert.Equal(t, d.ResourceVersion, scale.ResourceVersion)
	assert.Equal(t, d.Name, scale.Name)
}

func TestApplyScale(t *testing.T) {
	tests := []struct {
		name        string
		scale       autoscalingv1.Scale
		wantRV      string
		wantInvalid bool
	}{
		{"sets replicas", autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, "1", false},
		{"resource version becomes precondition", autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}, Spec: autoscalingv1.ScaleSpec{Replicas: 4}}, "7", false},
		{"negative replicas", autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: -1}}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := newDeployment()
			d, err := ApplyScale(old, &tt.scale)
			if tt.wantInvalid {
				assert.True(t, apierrors.IsInvalid(err), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.scale.Spec.Replicas, *d.Spec.Replicas)
			assert.Equal(t, tt.wantRV, d.ResourceVersion)
			assert.Equal(t, int32(1), *old.Spec.Replicas, "input mutated")
		})
	}
}
