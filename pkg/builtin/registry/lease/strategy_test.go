package lease

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidate(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "l", Namespace: "ns"}
	tests := []struct {
		name  string
		spec  coordinationv1.LeaseSpec
		valid bool
	}{
		{"held", coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](15)}, true},
		{"zero duration", coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To[int32](0)}, false},
		{"negative transitions", coordinationv1.LeaseSpec{LeaseTransitions: ptr.To[int32](-1)}, false},
		{"preferred holder without strategy", coordinationv1.LeaseSpec{PreferredHolder: ptr.To("you")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), &coordinationv1.Lease{ObjectMeta: meta, Spec: tt.spec})
			assert.Equal(t, tt.valid, len(errs) == 0, "%v", errs)
		})
	}
}
