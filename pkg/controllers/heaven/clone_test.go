package heaven

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	heavenfake "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/fake"
)

// A new heaven with a git remote starts as a clone of the remote branch;
// when there is none, or the remote cannot be reached, it starts empty.
func TestNewHeavenWithRemoteStartsFromItsRemoteBranch(t *testing.T) {
	for name, tc := range map[string]struct {
		cloned      bool
		err         error
		initialized bool
	}{
		"remote has the branch": {cloned: true},
		"remote lacks it":       {initialized: true},
		"remote is unreachable": {err: errors.New("connection refused"), initialized: true},
	} {
		t.Run(name, func(t *testing.T) {
			client := heavenfake.NewSimpleClientset(&v1alpha1.Heaven{
				ObjectMeta: metav1.ObjectMeta{Name: "shared", Finalizers: []string{v1alpha1.HeavenFinalizer}},
				Spec:       v1alpha1.HeavenSpec{Remote: &v1alpha1.Remote{URL: "git://127.0.0.1/x.git"}},
			})
			exists, cloned, initialized := false, false, false
			c := New(client, Branches{
				Info: func(context.Context, string) (bool, string, int64, error) { return exists, "abc", 7, nil },
				Clone: func(_ context.Context, name string, remote *v1alpha1.Remote) (bool, error) {
					assert.Equal(t, "shared", name)
					assert.Equal(t, "git://127.0.0.1/x.git", remote.URL)
					cloned, exists = tc.cloned, tc.cloned
					return tc.cloned, tc.err
				},
				Initialize: func(context.Context, string) error { initialized, exists = true, true; return nil },
			}, time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c.factory.Start(ctx.Done())
			require.True(t, cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced))

			require.NoError(t, c.reconcile(ctx, "shared"))
			assert.Equal(t, tc.cloned, cloned)
			assert.Equal(t, tc.initialized, initialized)
			h, err := client.HeavenV1alpha1().Heavens().Get(ctx, "shared", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, v1alpha1.HeavenPhaseReady, h.Status.Phase)
		})
	}
}
