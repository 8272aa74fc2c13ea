package secret

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestPrepareForCreateFoldsStringData(t *testing.T) {
	s := &corev1.Secret{Data: map[string][]byte{"a": []byte("1"), "b": []byte("old")}, StringData: map[string]string{"b": "2"}}
	Strategy.PrepareForCreate(context.Background(), s)
	assert.Equal(t, map[string][]byte{"a": []byte("1"), "b": []byte("2")}, s.Data)
	assert.Nil(t, s.StringData)
	assert.Equal(t, corev1.SecretTypeOpaque, s.Type)
}

func TestValidate(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "s", Namespace: "ns"}
	tests := []struct {
		name   string
		secret corev1.Secret
		valid  bool
	}{
		{"opaque", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": nil}}, true},
		{"bad key", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"../k": nil}}, false},
		{"tls without key", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: nil}}, false},
		{"tls", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS, Data: map[string][]byte{corev1.TLSCertKey: nil, corev1.TLSPrivateKeyKey: nil}}, true},
		{"token without service account", corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeServiceAccountToken}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), &tt.secret)
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}

func TestTypeIsImmutable(t *testing.T) {
	old := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns", ResourceVersion: "1"}, Type: corev1.SecretTypeOpaque}
	s := old.DeepCopy()
	s.Type = "example.com/other"
	assert.NotEmpty(t, Strategy.ValidateUpdate(context.Background(), s, old))
}

func TestGetAttrsHasType(t *testing.T) {
	_, f, err := GetAttrs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Type: corev1.SecretTypeTLS})
	assert.NoError(t, err)
	assert.True(t, fields.ParseSelectorOrDie("type=kubernetes.io/tls,metadata.namespace=ns").Matches(f))
}
