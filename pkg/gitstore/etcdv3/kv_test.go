package etcdv3

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

func keys(kvs []*mvccpb.KeyValue) []string {
	out := []string{}
	for _, kv := range kvs {
		out = append(out, string(kv.Key))
	}
	return out
}

func TestPutAndGetReturnRevisionsVersionsAndPrevKV(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		p1, err := c.Put(ctx, "/a", "1")
		require.NoError(t, err)
		p2, err := c.Put(ctx, "/a", "2", clientv3.WithPrevKV())
		require.NoError(t, err)
		require.Equal(t, p1.Header.Revision+1, p2.Header.Revision)
		require.Equal(t, "1", string(p2.PrevKv.Value))

		g, err := c.Get(ctx, "/a")
		require.NoError(t, err)
		require.Len(t, g.Kvs, 1)
		kv := g.Kvs[0]
		require.Equal(t, "/a", string(kv.Key))
		require.Equal(t, "2", string(kv.Value))
		require.Equal(t, p1.Header.Revision, kv.CreateRevision)
		require.Equal(t, p2.Header.Revision, kv.ModRevision)
		require.Equal(t, int64(2), kv.Version)
		require.Equal(t, p2.Header.Revision, g.Header.Revision)
		require.NotZero(t, g.Header.ClusterId)
		require.NotZero(t, g.Header.MemberId)
		require.NotZero(t, g.Header.RaftTerm)

		missing, err := c.Get(ctx, "/missing")
		require.NoError(t, err)
		require.Empty(t, missing.Kvs)
		require.Zero(t, missing.Count)
	})
}

func TestGetRangeOptions(t *testing.T) {
	cases := []struct {
		name      string
		key       string
		opts      []clientv3.OpOption
		wantKeys  []string
		wantCount int64
		wantMore  bool
		noValues  bool
	}{
		{name: "prefix", key: "/p/", opts: []clientv3.OpOption{clientv3.WithPrefix()},
			wantKeys: []string{"/p/1", "/p/2", "/p/3", "/p/4", "/p/5"}, wantCount: 5},
		{name: "limit", key: "/p/", opts: []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithLimit(2)},
			wantKeys: []string{"/p/1", "/p/2"}, wantCount: 5, wantMore: true},
		{name: "count only", key: "/p/", opts: []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithCountOnly()},
			wantKeys: []string{}, wantCount: 5},
		{name: "keys only", key: "/p/", opts: []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithKeysOnly()},
			wantKeys: []string{"/p/1", "/p/2", "/p/3", "/p/4", "/p/5"}, wantCount: 5, noValues: true},
		{name: "range", key: "/p/2", opts: []clientv3.OpOption{clientv3.WithRange("/p/4")},
			wantKeys: []string{"/p/2", "/p/3"}, wantCount: 2},
		{name: "sorted descending", key: "/p/", opts: []clientv3.OpOption{clientv3.WithPrefix(),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(3)},
			wantKeys: []string{"/p/5", "/p/4", "/p/3"}, wantCount: 5, wantMore: true},
	}
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		for _, k := range []string{"/p/1", "/p/2", "/p/3", "/p/4", "/p/5", "/q/1"} {
			_, err := c.Put(ctx, k, "value of "+k)
			require.NoError(t, err)
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				g, err := c.Get(ctx, tc.key, tc.opts...)
				require.NoError(t, err)
				require.Equal(t, tc.wantKeys, keys(g.Kvs))
				require.Equal(t, tc.wantCount, g.Count)
				require.Equal(t, tc.wantMore, g.More)
				for _, kv := range g.Kvs {
					if tc.noValues {
						require.Empty(t, kv.Value)
					} else {
						require.Equal(t, "value of "+string(kv.Key), string(kv.Value))
					}
				}
			})
		}
	})
}

func TestGetAtOldFutureAndCompactedRevisions(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		p1, err := c.Put(ctx, "/k", "v1")
		require.NoError(t, err)
		p2, err := c.Put(ctx, "/k", "v2")
		require.NoError(t, err)

		old, err := c.Get(ctx, "/k", clientv3.WithRev(p1.Header.Revision))
		require.NoError(t, err)
		require.Equal(t, "v1", string(old.Kvs[0].Value))
		require.Equal(t, p2.Header.Revision, old.Header.Revision)

		_, err = c.Get(ctx, "/k", clientv3.WithRev(p2.Header.Revision+10))
		require.ErrorIs(t, err, rpctypes.ErrFutureRev)

		if !tg.single {
			return // compaction is per branch; see TestPrefixModeRefusesCompact
		}
		_, err = c.Compact(ctx, p2.Header.Revision)
		require.NoError(t, err)
		_, err = c.Get(ctx, "/k", clientv3.WithRev(p1.Header.Revision))
		require.ErrorIs(t, err, rpctypes.ErrCompacted)
		_, err = c.Compact(ctx, p1.Header.Revision)
		require.ErrorIs(t, err, rpctypes.ErrCompacted)
		_, err = c.Compact(ctx, p2.Header.Revision+10)
		require.ErrorIs(t, err, rpctypes.ErrFutureRev)
		now, err := c.Get(ctx, "/k")
		require.NoError(t, err)
		require.Equal(t, "v2", string(now.Kvs[0].Value))
	})
}

func TestTxnComparesChooseThenOrElse(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		p1, err := c.Put(ctx, "/t", "x")
		require.NoError(t, err)
		p2, err := c.Put(ctx, "/t", "y")
		require.NoError(t, err)
		r1, r2 := p1.Header.Revision, p2.Header.Revision

		cases := []struct {
			name string
			cmp  clientv3.Cmp
			want bool
		}{
			{"mod revision equal", clientv3.Compare(clientv3.ModRevision("/t"), "=", r2), true},
			{"mod revision less", clientv3.Compare(clientv3.ModRevision("/t"), "<", r2), false},
			{"create revision equal", clientv3.Compare(clientv3.CreateRevision("/t"), "=", r1), true},
			{"missing key has create revision 0", clientv3.Compare(clientv3.CreateRevision("/missing"), "=", 0), true},
			{"version equal", clientv3.Compare(clientv3.Version("/t"), "=", 2), true},
			{"version greater", clientv3.Compare(clientv3.Version("/t"), ">", 2), false},
			{"value equal", clientv3.Compare(clientv3.Value("/t"), "=", "y"), true},
			{"value not equal", clientv3.Compare(clientv3.Value("/t"), "!=", "y"), false},
			{"value over a prefix", clientv3.Compare(clientv3.Value("/t"), "=", "y").WithPrefix(), true},
		}
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				then, els := fmt.Sprintf("/result/then/%d", i), fmt.Sprintf("/result/else/%d", i)
				resp, err := c.Txn(ctx).If(tc.cmp).
					Then(clientv3.OpPut(then, "1"), clientv3.OpGet("/t")).
					Else(clientv3.OpGet("/t"), clientv3.OpPut(els, "1")).
					Commit()
				require.NoError(t, err)
				require.Equal(t, tc.want, resp.Succeeded)
				require.Len(t, resp.Responses, 2)
				get := resp.Responses[1].GetResponseRange()
				written := then
				if !tc.want {
					get, written = resp.Responses[0].GetResponseRange(), els
				}
				require.Equal(t, []string{"/t"}, keys(get.Kvs))
				require.Equal(t, "y", string(get.Kvs[0].Value))
				g, err := c.Get(ctx, written)
				require.NoError(t, err)
				require.Len(t, g.Kvs, 1)
				require.Equal(t, resp.Header.Revision, g.Kvs[0].ModRevision)
			})
		}
	})
}

func TestDeleteRangeReturnsPrevKVs(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		for _, k := range []string{"/d/1", "/d/2", "/e"} {
			_, err := c.Put(ctx, k, "v"+k)
			require.NoError(t, err)
		}
		del, err := c.Delete(ctx, "/d/", clientv3.WithPrefix(), clientv3.WithPrevKV())
		require.NoError(t, err)
		require.Equal(t, int64(2), del.Deleted)
		require.Equal(t, []string{"/d/1", "/d/2"}, keys(del.PrevKvs))
		require.Equal(t, "v/d/1", string(del.PrevKvs[0].Value))

		g, err := c.Get(ctx, "/", clientv3.WithPrefix())
		require.NoError(t, err)
		require.Equal(t, []string{"/e"}, keys(g.Kvs))

		none, err := c.Delete(ctx, "/nothing")
		require.NoError(t, err)
		require.Zero(t, none.Deleted)
		require.Equal(t, del.Header.Revision, none.Header.Revision, "deleting nothing makes no revision")
	})
}

func TestInvalidRequestsAreRefusedAsEtcdDoes(t *testing.T) {
	manyOps := make([]clientv3.Op, DefaultMaxTxnOps+1)
	for i := range manyOps {
		manyOps[i] = clientv3.OpPut(fmt.Sprintf("/many/%d", i), "v")
	}
	cases := []struct {
		name string
		do   func(c *clientv3.Client) error
		want error
	}{
		{"too many txn ops", func(c *clientv3.Client) error {
			_, err := c.Txn(testContext(t)).Then(manyOps...).Commit()
			return err
		}, rpctypes.ErrTooManyOps},
		{"request too large", func(c *clientv3.Client) error {
			_, err := c.Put(testContext(t), "/big", strings.Repeat("x", DefaultMaxRequestBytes+1))
			return err
		}, rpctypes.ErrRequestTooLarge},
		{"duplicate key in txn", func(c *clientv3.Client) error {
			_, err := c.Txn(testContext(t)).Then(clientv3.OpPut("/dup", "1"), clientv3.OpPut("/dup", "2")).Commit()
			return err
		}, rpctypes.ErrDuplicateKey},
		{"ignore value with a value", func(c *clientv3.Client) error {
			_, err := c.Put(testContext(t), "/iv", "v", clientv3.WithIgnoreValue())
			return err
		}, rpctypes.ErrValueProvided},
		{"ignore value of a missing key", func(c *clientv3.Client) error {
			_, err := c.Put(testContext(t), "/missing", "", clientv3.WithIgnoreValue())
			return err
		}, rpctypes.ErrKeyNotFound},
		{"lease that does not exist", func(c *clientv3.Client) error {
			_, err := c.Put(testContext(t), "/l", "v", clientv3.WithLease(12345))
			return err
		}, rpctypes.ErrLeaseNotFound},
	}
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				require.ErrorIs(t, tc.do(c), tc.want)
			})
		}
		if tg.single {
			_, err := c.Get(testContext(t), "")
			require.ErrorIs(t, err, rpctypes.ErrEmptyKey)
		}
	})
}

func TestGetStreamReturnsTheWholeRangeInChunks(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		prefix := ""
		if !tg.single {
			prefix = testPrefix // namespace clients have no GetStream
		}
		kv := clientv3.NewKV(c)
		var want []string
		for i := range 30 {
			k := fmt.Sprintf("%s/s/%02d", prefix, i)
			want = append(want, k)
			_, err := kv.Put(ctx, k, strings.Repeat("v", 100_000)) // 3 MB in all
			require.NoError(t, err)
		}
		stream, err := kv.GetStream(ctx, prefix+"/s/", clientv3.WithPrefix())
		require.NoError(t, err)
		var chunks []clientv3.RangeStreamResponse
		for chunk := range stream {
			require.NoError(t, chunk.Err())
			chunks = append(chunks, chunk)
		}
		require.Greater(t, len(chunks), 1, "3 MB come in more than one chunk")
		got := &pb.RangeResponse{}
		for _, chunk := range chunks {
			proto.Merge(got, chunk.RangeResponse)
		}
		require.Equal(t, want, keys(got.Kvs))
		require.Equal(t, int64(30), got.Count)
		require.NotZero(t, got.Header.Revision)

		limited, err := kv.GetStream(ctx, prefix+"/s/", clientv3.WithPrefix(), clientv3.WithLimit(3))
		require.NoError(t, err)
		lim, err := clientv3.GetStreamToGetResponse(limited)
		require.NoError(t, err)
		require.Equal(t, want[:3], keys(lim.Kvs))
		require.True(t, lim.More)
		require.Equal(t, int64(30), lim.Count)
	})
}

// TestKubernetesCompactorProtocolWorks runs the protocol of
// k8s.io/apiserver's compactor (storage/etcd3/compact.go: a txn on the
// unprefixed "compact_rev_key", then Compact) in single-branch mode.
func TestKubernetesCompactorProtocolWorks(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		if !tg.single {
			t.Skip("compaction is per branch, through a single-branch endpoint")
		}
		ctx := testContext(t)
		compact := func(expectVersion, rev int64) (int64, int64) {
			resp, err := c.Txn(ctx).If(clientv3.Compare(clientv3.Version("compact_rev_key"), "=", expectVersion)).
				Then(clientv3.OpPut("compact_rev_key", strconv.FormatInt(rev, 10))).
				Else(clientv3.OpGet("compact_rev_key")).Commit()
			require.NoError(t, err)
			require.True(t, resp.Succeeded)
			if rev != 0 {
				_, err = c.Compact(ctx, rev)
				require.NoError(t, err)
			}
			return expectVersion + 1, resp.Header.Revision
		}
		_, err := c.Put(ctx, "/registry/x", "1")
		require.NoError(t, err)
		version, rev := compact(0, 0)
		_, err = c.Put(ctx, "/registry/x", "2")
		require.NoError(t, err)
		compact(version, rev)
		_, err = c.Get(ctx, "/registry/x", clientv3.WithRev(rev-1))
		require.ErrorIs(t, err, rpctypes.ErrCompacted)
		g, err := c.Get(ctx, "compact_rev_key")
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(rev, 10), string(g.Kvs[0].Value))
	})
}
