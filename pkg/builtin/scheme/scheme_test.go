package scheme_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
)

var meta = metav1.ObjectMeta{Name: "x", Namespace: "ns", Labels: map[string]string{"a": "b"}}

// samples are one object of every kind, already in their defaulted form so
// decoding (which defaults) leaves them unchanged.
func samples() []runtime.Object {
	d := &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
	}}
	scheme.Scheme.Default(d)
	return []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{corev1.LabelMetadataName: "x"}}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
		&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"k": []byte("v")}, Type: corev1.SecretTypeOpaque},
		&corev1.ServiceAccount{ObjectMeta: meta},
		&corev1.Event{ObjectMeta: meta, Reason: "R", InvolvedObject: corev1.ObjectReference{Name: "o"}},
		&eventsv1.Event{ObjectMeta: meta, Reason: "R", Regarding: corev1.ObjectReference{Name: "o"}},
		&coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("h")}},
		d,
		&autoscalingv1.Scale{ObjectMeta: meta, Spec: autoscalingv1.ScaleSpec{Replicas: 2}},
	}
}

func versionOf(t *testing.T, obj runtime.Object) schema.GroupVersion {
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	require.NoError(t, err)
	return kinds[0].GroupVersion()
}

func jsonSerializer() runtime.Serializer {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	return info.Serializer
}

func TestJSONRoundTripAtV1(t *testing.T) {
	for _, obj := range samples() {
		gv := versionOf(t, obj)
		t.Run(gv.String()+"/"+typeName(obj), func(t *testing.T) {
			codec := scheme.Codecs.CodecForVersions(jsonSerializer(), jsonSerializer(), gv, gv)
			data, err := runtime.Encode(codec, obj)
			require.NoError(t, err)
			got, err := runtime.Decode(codec, data)
			require.NoError(t, err)
			want := obj.DeepCopyObject()
			want.GetObjectKind().SetGroupVersionKind(got.GetObjectKind().GroupVersionKind())
			assert.True(t, apiequality.Semantic.DeepEqual(want, got), "round trip changed the object:\n%s", data)
			assert.Equal(t, gv, got.GetObjectKind().GroupVersionKind().GroupVersion())
		})
	}
}

func TestInternalVersionReencodesIdentically(t *testing.T) {
	for _, obj := range samples() {
		gv := versionOf(t, obj)
		t.Run(gv.String()+"/"+typeName(obj), func(t *testing.T) {
			external := scheme.Codecs.CodecForVersions(jsonSerializer(), jsonSerializer(), gv, gv)
			canonical, err := runtime.Encode(external, obj)
			require.NoError(t, err)

			toInternal := scheme.Codecs.CodecForVersions(jsonSerializer(), jsonSerializer(), gv, scheme.InternalVersion(gv))
			internal, err := runtime.Decode(toInternal, canonical)
			require.NoError(t, err)
			assert.True(t, internal.GetObjectKind().GroupVersionKind().Empty(), "internal objects carry no apiVersion/kind")
			again, err := runtime.Encode(toInternal, internal)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(canonical, again), "re-encoding differs:\n%s\n%s", canonical, again)
		})
	}
}

func TestConvertToVersionBothWays(t *testing.T) {
	for _, obj := range samples() {
		gv := versionOf(t, obj)
		t.Run(gv.String()+"/"+typeName(obj), func(t *testing.T) {
			internal, err := scheme.Scheme.ConvertToVersion(obj.DeepCopyObject(), scheme.InternalVersion(gv))
			require.NoError(t, err)
			assert.True(t, internal.GetObjectKind().GroupVersionKind().Empty())

			external, err := scheme.Scheme.ConvertToVersion(internal, gv)
			require.NoError(t, err)
			assert.Equal(t, gv, external.GetObjectKind().GroupVersionKind().GroupVersion())
			external.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
			assert.True(t, apiequality.Semantic.DeepEqual(obj, external))

			// Scheme.Convert between the two forms is the identity conversion.
			out := obj.DeepCopyObject()
			require.NoError(t, scheme.Scheme.Convert(internal, out, nil))
			assert.True(t, apiequality.Semantic.DeepEqual(obj, out))
		})
	}
}

func typeName(obj runtime.Object) string {
	kinds, _, _ := scheme.Scheme.ObjectKinds(obj)
	return kinds[0].Kind
}

func TestFieldLabelConversion(t *testing.T) {
	tests := []struct {
		gvk   schema.GroupVersionKind
		label string
		ok    bool
	}{
		{corev1.SchemeGroupVersion.WithKind("Secret"), "type", true},
		{corev1.SchemeGroupVersion.WithKind("Secret"), "metadata.name", true},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), "type", false},
		{corev1.SchemeGroupVersion.WithKind("Event"), "involvedObject.name", true},
		{corev1.SchemeGroupVersion.WithKind("Namespace"), "status.phase", true},
		{eventsv1.SchemeGroupVersion.WithKind("Event"), "regarding.name", true},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), "metadata.namespace", true},
	}
	for _, tt := range tests {
		_, _, err := scheme.Scheme.ConvertFieldLabel(tt.gvk, tt.label, "v")
		assert.Equal(t, tt.ok, err == nil, "%s %s: %v", tt.gvk.Kind, tt.label, err)
	}
}
