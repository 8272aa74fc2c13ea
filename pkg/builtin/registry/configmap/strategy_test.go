package configmap

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "cm", Namespace: "ns"}
	tests := []struct {
		name  string
		cm    corev1.ConfigMap
		valid bool
	}{
		{"data", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a.b_c-d": "1"}}, true},
		{"key with slash", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a/b": "1"}}, false},
		{"binary key with space", corev1.ConfigMap{ObjectMeta: meta, BinaryData: map[string][]byte{"a b": nil}}, false},
		{"key in data and binaryData", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": ""}, BinaryData: map[string][]byte{"a": nil}}, false},
		{"too large", corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"a": strings.Repeat("x", 1<<20+1)}}, false},
		{"no namespace", corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), &tt.cm)
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}

func TestImmutableConfigMapRejectsDataChange(t *testing.T) {
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "ns", ResourceVersion: "1"}, Data: map[string]string{"a": "1"}, Immutable: ptr.To(true)}
	cm := old.DeepCopy()
	cm.Data["a"] = "2"
	assert.NotEmpty(t, Strategy.ValidateUpdate(context.Background(), cm, old))
	cm = old.DeepCopy()
	cm.Labels = map[string]string{"x": "y"}
	assert.Empty(t, Strategy.ValidateUpdate(context.Background(), cm, old))
}
