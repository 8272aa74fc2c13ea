package event

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

func TestValidate(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "e", Namespace: "ns"}
	tests := []struct {
		name  string
		event corev1.Event
		valid bool
	}{
		{"old style", corev1.Event{ObjectMeta: meta, InvolvedObject: corev1.ObjectReference{Namespace: "ns"}}, true},
		{"namespace mismatch", corev1.Event{ObjectMeta: meta, InvolvedObject: corev1.ObjectReference{Namespace: "other"}}, false},
		{"cluster object outside default", corev1.Event{ObjectMeta: meta}, false},
		{"new style without reporting fields", corev1.Event{ObjectMeta: meta, InvolvedObject: corev1.ObjectReference{Namespace: "ns"}, EventTime: metav1.NewMicroTime(time.Now())}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), &tt.event)
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}

func TestGetAttrsInvolvedObject(t *testing.T) {
	_, f, err := GetAttrs(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p"},
		Reason:         "Started", Type: corev1.EventTypeNormal,
	})
	assert.NoError(t, err)
	assert.True(t, fields.ParseSelectorOrDie("involvedObject.kind=Pod,involvedObject.name=p,reason=Started,type=Normal").Matches(f))
}
