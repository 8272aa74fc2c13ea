package etcdv3

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
)

// Prefix mode, seen by a client that writes full keys.

func startPrefix(t *testing.T) *clientv3.Client {
	return newClient(t, startHeaven(t, Config{}))
}

func TestPrefixModeBranchesAreSeparateKeyspaces(t *testing.T) {
	c := startPrefix(t)
	ctx := testContext(t)
	a, err := c.Put(ctx, "/team-a/registry/x", "a")
	require.NoError(t, err)
	b, err := c.Put(ctx, "/team-b/registry/x", "b")
	require.NoError(t, err)
	require.Equal(t, a.Header.Revision, b.Header.Revision, "each branch counts its own revisions")
	_, err = c.Put(ctx, "/team-a/registry/y", "a")
	require.NoError(t, err)

	ga, err := c.Get(ctx, "/team-a/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Equal(t, []string{"/team-a/registry/x", "/team-a/registry/y"}, keys(ga.Kvs))
	gb, err := c.Get(ctx, "/team-b/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.Equal(t, []string{"/team-b/registry/x"}, keys(gb.Kvs))
	require.Equal(t, "b", string(gb.Kvs[0].Value))
	require.Equal(t, b.Header.Revision, gb.Header.Revision)

	// "every key >= start" stops at the end of the branch.
	from, err := c.Get(ctx, "/team-a/registry/y", clientv3.WithFromKey())
	require.NoError(t, err)
	require.Equal(t, []string{"/team-a/registry/y"}, keys(from.Kvs))

	txn, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Value("/team-b/registry/x"), "=", "b")).
		Then(clientv3.OpPut("/team-b/registry/z", "1", clientv3.WithPrevKV()), clientv3.OpGet("/team-b/registry/x")).
		Commit()
	require.NoError(t, err)
	require.True(t, txn.Succeeded)
	require.Equal(t, []string{"/team-b/registry/x"}, keys(txn.Responses[1].GetResponseRange().Kvs))

	del, err := c.Delete(ctx, "/team-b/registry/", clientv3.WithPrefix(), clientv3.WithPrevKV())
	require.NoError(t, err)
	require.Equal(t, []string{"/team-b/registry/x", "/team-b/registry/z"}, keys(del.PrevKvs))
}

func TestPrefixModeRejectsRequestsThatLeaveOneBranch(t *testing.T) {
	c := startPrefix(t)
	cases := []struct {
		name string
		do   func() error
	}{
		{"key without branch", func() error { _, err := c.Put(testContext(t), "/x", "1"); return err }},
		{"key without slash", func() error { _, err := c.Get(testContext(t), "compact_rev_key"); return err }},
		{"range into another branch", func() error {
			_, err := c.Get(testContext(t), "/team-a/x", clientv3.WithRange("/team-b/y"))
			return err
		}},
		{"prefix of a branch name", func() error {
			_, err := c.Get(testContext(t), "/team-a", clientv3.WithPrefix())
			return err
		}},
		{"txn across branches", func() error {
			_, err := c.Txn(testContext(t)).If(clientv3.Compare(clientv3.Version("/team-a/x"), "=", 0)).
				Then(clientv3.OpPut("/team-b/x", "1")).Commit()
			return err
		}},
		{"empty txn", func() error { _, err := c.Txn(testContext(t)).Commit(); return err }},
		{"invalid branch name", func() error { _, err := c.Put(testContext(t), "/Team_A/x", "1"); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			require.Equal(t, codes.InvalidArgument, code(err), "err: %v", err)
		})
	}

	resp := next(t, c.Watch(testContext(t), "/team-a/x", clientv3.WithRange("/team-b/")))
	require.True(t, resp.Canceled)
	require.Error(t, resp.Err())
}

func TestPrefixModeRefusesCompact(t *testing.T) {
	c := startPrefix(t)
	_, err := c.Compact(testContext(t), 1)
	require.Equal(t, codes.FailedPrecondition, code(err), "err: %v", err)
}

func TestPrefixModeWatchAndLeaseKeysCarryTheBranch(t *testing.T) {
	c := startPrefix(t)
	ctx := testContext(t)
	l, err := c.Grant(ctx, 60)
	require.NoError(t, err)
	_, err = c.Put(ctx, "/team-a/k", "1", clientv3.WithLease(l.ID))
	require.NoError(t, err)
	_, err = c.Put(ctx, "/team-b/k", "1", clientv3.WithLease(l.ID))
	require.NoError(t, err)
	ttl, err := c.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
	require.NoError(t, err)
	var got []string
	for _, k := range ttl.Keys {
		got = append(got, string(k))
	}
	require.ElementsMatch(t, []string{"/team-a/k", "/team-b/k"}, got)

	wa := c.Watch(ctx, "/team-a/", clientv3.WithPrefix(), clientv3.WithPrevKV())
	wb := c.Watch(ctx, "/team-b/k")
	_, err = c.Revoke(ctx, l.ID)
	require.NoError(t, err)
	require.Equal(t, []event{{typ: mvccpb.DELETE, key: "/team-a/k", prevValue: "1"}}, summarize(collectEvents(t, wa, 1)))
	require.Equal(t, []event{{typ: mvccpb.DELETE, key: "/team-b/k"}}, summarize(collectEvents(t, wb, 1)))

	// A stream watching two branches still gets its progress: per watch.
	require.NoError(t, c.RequestProgress(ctx))
	for _, wch := range []clientv3.WatchChan{wa, wb} {
		resp := next(t, wch)
		require.True(t, resp.IsProgressNotify(), "want a progress notification, got %+v", resp)
	}

	st, err := c.Status(ctx, c.Endpoints()[0])
	require.NoError(t, err)
	require.Zero(t, st.Header.Revision, "prefix mode has no keyspace-wide revision")
}
