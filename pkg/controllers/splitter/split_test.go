package splitter

import (
	"testing"

	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func TestShares(t *testing.T) {
	for _, tc := range []struct {
		replicas int32
		n        int
		want     []int32
	}{
		{5, 2, []int32{3, 2}},
		{4, 2, []int32{2, 2}},
		{1, 3, []int32{1, 0, 0}},
		{0, 2, []int32{0, 0}},
		{7, 3, []int32{3, 2, 2}},
		{3, 1, []int32{3}},
	} {
		assert.Equal(t, tc.want, shares(tc.replicas, tc.n), "%d over %d", tc.replicas, tc.n)
	}
}

func TestTargetsOf(t *testing.T) {
	d := &appsv1.Deployment{}
	assert.Equal(t, []string{"east", "west"}, targetsOf(d, []string{"west", "east"}), "every target of the heaven, sorted")
	d.Annotations = map[string]string{TargetsAnnotation: " west, east,west,, "}
	assert.Equal(t, []string{"east", "west"}, targetsOf(d, []string{"north"}), "the annotation's, once each")
	d.Annotations[TargetsAnnotation] = ""
	assert.Empty(t, targetsOf(d, []string{"north"}), "an empty list splits over none")
}

func TestChildrenAndAggregate(t *testing.T) {
	parent := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "demo", UID: "u1", Generation: 4,
			Labels: map[string]string{SplitLabel: "", "app": "web"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}},
	}
	kids := children(parent, []string{"east", "west"})
	assert.Len(t, kids, 2)
	assert.Equal(t, "web-east", kids[0].Name)
	assert.Equal(t, map[string]string{"app": "web", v1alpha1.ClusterLabel: "east", ParentLabel: "web"}, kids[0].Labels)
	assert.Equal(t, int32(3), *kids[0].Spec.Replicas)
	assert.Equal(t, int32(2), *kids[1].Spec.Replicas)
	assert.Equal(t, "nginx", kids[1].Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, int32(5), *parent.Spec.Replicas, "the parent is not changed")
	assert.True(t, *kids[0].OwnerReferences[0].Controller)

	kids[0].Generation, kids[1].Generation = 2, 1
	kids[0].Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3, UpdatedReplicas: 3}
	kids[1].Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, UpdatedReplicas: 2, UnavailableReplicas: 1}
	st := aggregate(parent, kids)
	assert.Equal(t, appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 5, ReadyReplicas: 4, AvailableReplicas: 4, UpdatedReplicas: 5, UnavailableReplicas: 1}, st)
	kids[1].Generation = 2 // a change not yet seen by the cluster
	assert.Equal(t, int64(0), aggregate(parent, kids).ObservedGeneration, "not observed until every child is")
}
