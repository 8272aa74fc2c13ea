package scheme_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
)

func TestDecodingDefaults(t *testing.T) {
	decoder := scheme.Codecs.UniversalDecoder()
	tests := []struct {
		name  string
		json  string
		check func(t *testing.T, obj runtime.Object)
	}{{
		name: "deployment",
		json: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]}]}}}}`,
		check: func(t *testing.T, obj runtime.Object) {
			d := obj.(*appsv1.Deployment)
			assert.Equal(t, int32(1), *d.Spec.Replicas)
			assert.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, d.Spec.Strategy.Type)
			assert.Equal(t, intstr.FromString("25%"), *d.Spec.Strategy.RollingUpdate.MaxSurge)
			assert.Equal(t, intstr.FromString("25%"), *d.Spec.Strategy.RollingUpdate.MaxUnavailable)
			assert.Equal(t, int32(10), *d.Spec.RevisionHistoryLimit)
			assert.Equal(t, int32(600), *d.Spec.ProgressDeadlineSeconds)
			c := d.Spec.Template.Spec.Containers[0]
			assert.Equal(t, corev1.PullAlways, c.ImagePullPolicy)
			assert.Equal(t, corev1.ProtocolTCP, c.Ports[0].Protocol)
			assert.Equal(t, corev1.RestartPolicyAlways, d.Spec.Template.Spec.RestartPolicy)
		},
	}, {
		name: "secret",
		json: `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}`,
		check: func(t *testing.T, obj runtime.Object) {
			assert.Equal(t, corev1.SecretTypeOpaque, obj.(*corev1.Secret).Type)
		},
	}, {
		name: "namespace",
		json: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n"}}`,
		check: func(t *testing.T, obj runtime.Object) {
			assert.Equal(t, corev1.NamespaceActive, obj.(*corev1.Namespace).Status.Phase)
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj, err := runtime.Decode(decoder, []byte(tt.json))
			require.NoError(t, err)
			tt.check(t, obj)
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                         corev1.PullAlways,
		"nginx:latest":                  corev1.PullAlways,
		"nginx:1.27":                    corev1.PullIfNotPresent,
		"registry:5000/nginx":           corev1.PullAlways,
		"registry:5000/nginx:1":         corev1.PullIfNotPresent,
		"nginx@sha256:0123456789abcdef": corev1.PullIfNotPresent,
	} {
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}}}}
		scheme.Scheme.Default(d) // Kubernetes' own defaults, registered in the scheme
		assert.Equal(t, want, d.Spec.Template.Spec.Containers[0].ImagePullPolicy, image)
	}
}
