package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestUnreachableTellsOutagesFromRefusals(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:1", Err: syscall.ECONNREFUSED}
	gr := schema.GroupResource{Resource: "configmaps"}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{fmt.Errorf("applying to the physical cluster: %w", refused), true},
		{context.DeadlineExceeded, true},
		{apierrors.NewServiceUnavailable("starting"), true},
		{apierrors.NewTooManyRequests("slow down", 1), true},
		{apierrors.NewTimeoutError("slow", 1), true},
		{apierrors.NewBadRequest("no"), false},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "cm", nil), false},
		{apierrors.NewConflict(gr, "cm", errors.New("changed")), false},
		{apierrors.NewForbidden(gr, "cm", errors.New("no")), false},
		{&notOwnedError{what: "configmaps x/cm"}, false},
	} {
		assert.Equal(t, tc.want, unreachable(tc.err), "%v", tc.err)
	}
}
