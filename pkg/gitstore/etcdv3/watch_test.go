package etcdv3

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// next returns the next watch response, failing after a deadline.
func next(t *testing.T, wch clientv3.WatchChan) clientv3.WatchResponse {
	t.Helper()
	select {
	case resp, ok := <-wch:
		require.True(t, ok, "watch channel closed")
		return resp
	case <-time.After(10 * time.Second):
		t.Fatal("no watch response within 10s")
		return clientv3.WatchResponse{}
	}
}

// collectEvents reads responses until n events arrived.
func collectEvents(t *testing.T, wch clientv3.WatchChan, n int) []*clientv3.Event {
	t.Helper()
	var evs []*clientv3.Event
	for len(evs) < n {
		resp := next(t, wch)
		require.NoError(t, resp.Err())
		evs = append(evs, resp.Events...)
	}
	require.Len(t, evs, n)
	return evs
}

type event struct {
	typ       mvccpb.Event_EventType
	key, val  string
	prevValue string
}

func summarize(evs []*clientv3.Event) []event {
	var out []event
	for _, e := range evs {
		s := event{typ: e.Type, key: string(e.Kv.Key), val: string(e.Kv.Value)}
		if e.PrevKv != nil {
			s.prevValue = string(e.PrevKv.Value)
		}
		out = append(out, s)
	}
	return out
}

func TestWatchFromAPastRevisionWithPrevKV(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		p1, err := c.Put(ctx, "/w/a", "1")
		require.NoError(t, err)
		_, err = c.Put(ctx, "/w/a", "2")
		require.NoError(t, err)
		_, err = c.Delete(ctx, "/w/a")
		require.NoError(t, err)
		_, err = c.Put(ctx, "/other", "x")
		require.NoError(t, err)

		wch := c.Watch(ctx, "/w/", clientv3.WithPrefix(), clientv3.WithRev(p1.Header.Revision), clientv3.WithPrevKV())
		require.Equal(t, []event{
			{typ: mvccpb.PUT, key: "/w/a", val: "1"},
			{typ: mvccpb.PUT, key: "/w/a", val: "2", prevValue: "1"},
			{typ: mvccpb.DELETE, key: "/w/a", prevValue: "2"},
		}, summarize(collectEvents(t, wch, 3)))

		// And live events after the catch-up.
		live, err := c.Put(ctx, "/w/b", "3")
		require.NoError(t, err)
		evs := collectEvents(t, wch, 1)
		require.Equal(t, []event{{typ: mvccpb.PUT, key: "/w/b", val: "3"}}, summarize(evs))
		require.Equal(t, live.Header.Revision, evs[0].Kv.ModRevision)
	})
}

func TestWatchFilters(t *testing.T) {
	cases := []struct {
		name   string
		filter clientv3.OpOption
		want   []event
	}{
		{"no put", clientv3.WithFilterPut(), []event{{typ: mvccpb.DELETE, key: "/f"}}},
		{"no delete", clientv3.WithFilterDelete(), []event{{typ: mvccpb.PUT, key: "/f", val: "1"}}},
	}
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		start, err := c.Put(ctx, "/start", "")
		require.NoError(t, err)
		_, err = c.Put(ctx, "/f", "1")
		require.NoError(t, err)
		_, err = c.Delete(ctx, "/f")
		require.NoError(t, err)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				wch := c.Watch(ctx, "/f", clientv3.WithRev(start.Header.Revision), tc.filter)
				require.Equal(t, tc.want, summarize(collectEvents(t, wch, 1)))
			})
		}
	})
}

// TestWatchProgressRequestIsAnsweredForTheStream: after a write elsewhere,
// a progress request is answered with a broadcast notification whose
// revision covers that write (what k8s.io/apiserver's consistent reads from
// the watch cache wait for).
func TestWatchProgressRequestIsAnsweredForTheStream(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		wctx := clientv3.WithRequireLeader(ctx)
		w1 := c.Watch(wctx, "/watched/", clientv3.WithPrefix())
		w2 := c.Watch(wctx, "/also-watched")
		// The watches exist once a write to them arrives.
		_, err := c.Put(ctx, "/watched/x", "1")
		require.NoError(t, err)
		collectEvents(t, w1, 1)

		elsewhere, err := c.Put(ctx, "/elsewhere", "1")
		require.NoError(t, err)
		require.NoError(t, c.RequestProgress(wctx))
		for _, wch := range []clientv3.WatchChan{w1, w2} {
			resp := next(t, wch)
			require.True(t, resp.IsProgressNotify(), "want a progress notification, got %+v", resp)
			require.GreaterOrEqual(t, resp.Header.Revision, elsewhere.Header.Revision)
		}
	})
}

func TestWatchProgressNotifyWhenIdle(t *testing.T) {
	forEachTarget(t, options{progressNotifyInterval: 200 * time.Millisecond}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		p, err := c.Put(ctx, "/idle-elsewhere", "1")
		require.NoError(t, err)
		wch := c.Watch(ctx, "/idle", clientv3.WithProgressNotify())
		resp := next(t, wch)
		require.True(t, resp.IsProgressNotify(), "want a progress notification, got %+v", resp)
		require.GreaterOrEqual(t, resp.Header.Revision, p.Header.Revision)
	})
}

func TestWatchFromACompactedRevisionReportsCompaction(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		if !tg.single {
			t.Skip("compaction is per branch, through a single-branch endpoint")
		}
		ctx := testContext(t)
		p1, err := c.Put(ctx, "/c", "1")
		require.NoError(t, err)
		p2, err := c.Put(ctx, "/c", "2")
		require.NoError(t, err)
		_, err = c.Compact(ctx, p2.Header.Revision)
		require.NoError(t, err)

		resp := next(t, c.Watch(ctx, "/c", clientv3.WithRev(p1.Header.Revision)))
		require.Equal(t, p2.Header.Revision, resp.CompactRevision)
		require.ErrorIs(t, resp.Err(), rpctypes.ErrCompacted)
	})
}

func TestWatchEndsWhenCanceled(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx, cancel := context.WithCancel(testContext(t))
		wch := c.Watch(ctx, "/x")
		_, err := c.Put(testContext(t), "/x", "1")
		require.NoError(t, err)
		collectEvents(t, wch, 1)
		cancel()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case _, ok := <-wch:
				if !ok {
					return
				}
			case <-deadline:
				t.Fatal("watch channel not closed 10s after cancel")
			}
		}
	})
}

// TestProgressNotificationsNeverRunAheadOfEvents: with several watches on one
// stream and writes going on, every progress notification a watch sees is at
// least the revision of every event it saw before, and every event it sees
// after is newer.
func TestProgressNotificationsNeverRunAheadOfEvents(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		wctx := clientv3.WithRequireLeader(ctx)
		prefixes := []string{"/a/", "/b/"}
		var chans []clientv3.WatchChan
		for _, p := range prefixes {
			chans = append(chans, c.Watch(wctx, p, clientv3.WithPrefix()))
		}

		const writes = 150
		written := make(chan int64, 1) // the last revision written
		go func() {
			var last int64
			defer func() { written <- last }()
			for i := range writes {
				p, err := c.Put(ctx, []string{"/a/", "/b/", "/c/"}[i%3]+"k", "v")
				if err != nil {
					t.Error(err)
					return
				}
				last = p.Header.Revision
			}
		}()
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()

		type state struct{ maxEvent, progress int64 }
		states := make([]state, len(chans))
		last := int64(-1)
		deadline := time.After(20 * time.Second)
		for {
			if last >= 0 && states[0].progress >= last && states[1].progress >= last {
				return
			}
			select {
			case last = <-written:
			case <-ticker.C:
				require.NoError(t, c.RequestProgress(wctx))
			case resp := <-chans[0]:
				checkProgressOrder(t, &states[0].maxEvent, &states[0].progress, resp)
			case resp := <-chans[1]:
				checkProgressOrder(t, &states[1].maxEvent, &states[1].progress, resp)
			case <-deadline:
				t.Fatalf("no progress up to %d within 20s: %+v", last, states)
			}
		}
	})
}

func checkProgressOrder(t *testing.T, maxEvent, progress *int64, resp clientv3.WatchResponse) {
	t.Helper()
	require.NoError(t, resp.Err())
	if resp.IsProgressNotify() {
		require.GreaterOrEqual(t, resp.Header.Revision, *maxEvent, "progress went back before an event already seen")
		*progress = max(*progress, resp.Header.Revision)
		return
	}
	for _, ev := range resp.Events {
		require.Greater(t, ev.Kv.ModRevision, *progress, "event at or before a progress notification")
		*maxEvent = ev.Kv.ModRevision
	}
}
