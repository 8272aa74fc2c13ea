package controllerheaven

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func TestDeploymentMountsTheKubeconfigEverywhere(t *testing.T) {
	ch := &v1alpha1.ControllerHeaven{
		ObjectMeta: metav1.ObjectMeta{Name: "ctrl"},
		Spec: v1alpha1.ControllerHeavenSpec{Fork: "main", Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ctrl"}},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", Image: "init:1"}},
				Containers: []corev1.Container{
					{Name: "a", Image: "a:1", Env: []corev1.EnvVar{{Name: "MODE", Value: "x"}}},
					{Name: "b", Image: "b:1"},
				},
				Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
		}},
	}
	before := ch.DeepCopy()
	d := Deployment(ch)
	assert.Equal(t, before, ch, "the ControllerHeaven is left as it was")

	assert.Equal(t, Namespace("ctrl"), d.Namespace)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	assert.Equal(t, map[string]string{v1alpha1.ControllerHeavenLabel: "ctrl"}, d.Spec.Selector.MatchLabels)
	assert.Equal(t, map[string]string{"app": "ctrl", v1alpha1.ControllerHeavenLabel: "ctrl"}, d.Spec.Template.Labels)
	require.Len(t, d.Spec.Template.Spec.Volumes, 2)
	assert.Equal(t, SecretName, d.Spec.Template.Spec.Volumes[1].Secret.SecretName)
	for _, c := range append(d.Spec.Template.Spec.InitContainers, d.Spec.Template.Spec.Containers...) {
		assert.Contains(t, c.Env, corev1.EnvVar{Name: "KUBECONFIG", Value: v1alpha1.ControllerKubeconfigPath}, c.Name)
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: volumeName, MountPath: "/etc/heaven", ReadOnly: true}, c.Name)
	}
	assert.Equal(t, corev1.EnvVar{Name: "MODE", Value: "x"}, d.Spec.Template.Spec.Containers[0].Env[0], "the template's own environment stays first")

	// One replica unless asked.
	ch.Spec.Replicas = nil
	assert.Equal(t, int32(1), *Deployment(ch).Spec.Replicas)
}

func TestMergesBothWays(t *testing.T) {
	ch := &v1alpha1.ControllerHeaven{ObjectMeta: metav1.ObjectMeta{Name: "ctrl"},
		Spec: v1alpha1.ControllerHeavenSpec{Fork: "main", Heaven: "ctrl-heaven", Resources: []string{"apps/deployments"}}}
	in, out := merges(ch)[0], merges(ch)[1]
	assert.Equal(t, []string{"main"}, in.Spec.Sources)
	assert.Equal(t, "ctrl-heaven", in.Spec.Target)
	assert.Equal(t, []string{"ctrl-heaven"}, out.Spec.Sources)
	assert.Equal(t, "main", out.Spec.Target)
	for _, m := range []*v1alpha1.AutomatedMerge{in, out} {
		assert.Equal(t, []string{"apps/deployments"}, m.Spec.Resources)
	}
	// Specs from main win coming in; the controller's statuses win going out.
	assert.Equal(t, v1alpha1.PreferSource, in.Spec.ConflictPolicy.Default)
	assert.Contains(t, in.Spec.ConflictPolicy.Rules, v1alpha1.ConflictRule{Path: ".status", Resolution: v1alpha1.PreferTarget})
	assert.Equal(t, v1alpha1.PreferTarget, out.Spec.ConflictPolicy.Default)
	assert.Contains(t, out.Spec.ConflictPolicy.Rules, v1alpha1.ConflictRule{Path: ".status", Resolution: v1alpha1.PreferSource})
}
