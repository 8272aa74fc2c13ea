package storage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

func openBranch(t *testing.T) (*gitstore.Repository, *gitstore.Branch) {
	t.Helper()
	r, err := gitstore.Open(filepath.Join(t.TempDir(), "heavens.git"), gitstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	return r, b
}

// next returns the next response of ch, failing after a deadline; ok is
// false once ch is closed.
func next(t *testing.T, ch clientv3.WatchChan) (clientv3.WatchResponse, bool) {
	t.Helper()
	select {
	case r, ok := <-ch:
		return r, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no watch response")
		return clientv3.WatchResponse{}, false
	}
}

func TestBranchClientWatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c *clientv3.Client, cancel context.CancelFunc)
	}{
		{"the caller's context ends", func(_ *clientv3.Client, cancel context.CancelFunc) { cancel() }},
		{"the client closes", func(c *clientv3.Client, _ context.CancelFunc) { c.Watcher.Close() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, b := openBranch(t)
			c := NewBranchClient(b, nil).Client
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := c.Watch(ctx, "/w/", clientv3.WithPrefix(), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
			rev1, err := b.Put(ctx, "/w/a", []byte("1"))
			require.NoError(t, err)
			rev2, err := b.Put(ctx, "/w/a", []byte("2"))
			require.NoError(t, err)

			var events []*clientv3.Event
			for len(events) < 2 {
				r, ok := next(t, ch)
				require.True(t, ok, "closed early")
				events = append(events, r.Events...)
			}
			require.Equal(t, rev1, events[0].Kv.ModRevision)
			require.Equal(t, "2", string(events[1].Kv.Value))
			require.Equal(t, "1", string(events[1].PrevKv.Value))

			require.NoError(t, c.RequestProgress(ctx))
			r, ok := next(t, ch)
			require.True(t, ok)
			require.True(t, r.IsProgressNotify(), "%+v", r)
			require.GreaterOrEqual(t, r.Header.Revision, rev2)

			tc.end(c, cancel)
			for {
				if _, ok := next(t, ch); !ok {
					break
				}
			}
		})
	}
}

func TestBranchClientWatchOfAClosedBranch(t *testing.T) {
	repo, b := openBranch(t)
	c := NewBranchClient(b, nil).Client
	require.NoError(t, repo.CloseBranch("team-a"))
	ch := c.Watch(context.Background(), "/w/", clientv3.WithPrefix())
	r, ok := next(t, ch)
	require.True(t, ok)
	require.True(t, r.Canceled)
	_, ok = next(t, ch)
	require.False(t, ok)
}
