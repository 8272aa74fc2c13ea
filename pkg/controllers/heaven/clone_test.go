package heaven

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
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
			h := &v1alpha1.Heaven{
				TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Heaven"},
				ObjectMeta: metav1.ObjectMeta{Name: "shared", Finalizers: []string{v1alpha1.HeavenFinalizer}},
				Spec:       v1alpha1.HeavenSpec{Remote: &v1alpha1.Remote{URL: "git://127.0.0.1/x.git"}},
			}
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(h)
			require.NoError(t, err)
			client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
				map[schema.GroupVersionResource]string{v1alpha1.HeavensResource: "HeavenList"}, &unstructured.Unstructured{Object: raw})
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
			u, err := client.Resource(v1alpha1.HeavensResource).Get(ctx, "shared", metav1.GetOptions{})
			require.NoError(t, err)
			phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			assert.Equal(t, string(v1alpha1.HeavenPhaseReady), phase)
		})
	}
}
