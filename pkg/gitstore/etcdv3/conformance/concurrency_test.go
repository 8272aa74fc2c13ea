package conformance

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

const (
	counterKey        = "/counter"
	concurrentClients = 16
	updatesPerClient  = 20
	counterWatchers   = 4
)

// TestConcurrentCompareAndSwapLosesNoUpdate has many clients, each on its
// own connection, increment one counter with read / compare mod_revision /
// put, retrying when the compare fails. Every acknowledged increment must be
// in the final value, and every acknowledgement must name its own revision.
// Watchers started before the first write must see every increment once,
// in revision order, each one more than the last.
func TestConcurrentCompareAndSwapLosesNoUpdate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := newClient(t, backendOptions{}).Client
	endpoints := admin.Endpoints()

	put, err := admin.Put(ctx, counterKey, "0")
	require.NoError(t, err)
	start := put.Header.Revision

	const total = concurrentClients * updatesPerClient
	watchers := make([]<-chan watchLog, counterWatchers)
	for i := range watchers {
		watchers[i] = recordWatch(ctx, t, admin, counterKey, start+1, total)
	}
	// A watcher of the whole keyspace sees the same stream.
	everything := recordWatch(ctx, t, admin, "", start+1, total, clientv3.WithPrefix())

	acks := make(chan int64, total)
	var wg sync.WaitGroup
	for range concurrentClients {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		wg.Go(func() {
			for range updatesPerClient {
				rev, err := increment(ctx, c)
				if err != nil {
					t.Errorf("increment: %v", err)
					return
				}
				acks <- rev
			}
		})
	}
	wg.Wait()
	close(acks)
	if t.Failed() {
		t.FailNow()
	}

	ackRevs := map[int64]bool{}
	for rev := range acks {
		require.False(t, ackRevs[rev], "two acknowledged updates at revision %d", rev)
		ackRevs[rev] = true
	}
	require.Len(t, ackRevs, total)

	got, err := admin.Get(ctx, counterKey)
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	require.Equal(t, strconv.Itoa(total), string(got.Kvs[0].Value), "acknowledged updates were lost")
	require.Equal(t, int64(total+1), got.Kvs[0].Version, "the key's version counts every put")
	require.True(t, ackRevs[got.Kvs[0].ModRevision], "the final mod_revision %d was never acknowledged", got.Kvs[0].ModRevision)

	for i, w := range append(watchers, everything) {
		log := <-w
		require.NoError(t, log.err, "watcher %d", i)
		require.Len(t, log.revs, total, "watcher %d", i)
		for j, rev := range log.revs {
			require.True(t, ackRevs[rev], "watcher %d saw revision %d that no client was acknowledged", i, rev)
			if j > 0 {
				require.Greater(t, rev, log.revs[j-1], "watcher %d: revision %d after %d", i, rev, log.revs[j-1])
			}
			require.Equal(t, strconv.Itoa(j+1), log.values[j], "watcher %d: event %d at revision %d", i, j, rev)
		}
	}
}

// increment adds one to the counter with a compare on its mod_revision,
// retrying until the compare holds; it returns the revision of the write.
func increment(ctx context.Context, c *clientv3.Client) (int64, error) {
	for {
		cur, err := c.Get(ctx, counterKey)
		if err != nil {
			return 0, err
		}
		n, err := strconv.Atoi(string(cur.Kvs[0].Value))
		if err != nil {
			return 0, err
		}
		resp, err := c.Txn(ctx).
			If(clientv3.Compare(clientv3.ModRevision(counterKey), "=", cur.Kvs[0].ModRevision)).
			Then(clientv3.OpPut(counterKey, strconv.Itoa(n+1))).
			Commit()
		if err != nil {
			return 0, err
		}
		if resp.Succeeded {
			return resp.Header.Revision, nil
		}
	}
}

// watchLog is what one watcher saw: the revision and value of each event.
type watchLog struct {
	revs   []int64
	values []string
	err    error
}

// recordWatch watches key from rev until it has seen want events (or ctx
// ends) and then delivers its log.
func recordWatch(ctx context.Context, t *testing.T, c *clientv3.Client, key string, rev int64, want int, opts ...clientv3.OpOption) <-chan watchLog {
	t.Helper()
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	ch := c.Watch(wctx, key, append(opts, clientv3.WithRev(rev))...)
	out := make(chan watchLog, 1)
	go func() {
		defer cancel()
		var log watchLog
		defer func() { out <- log }()
		for resp := range ch {
			if err := resp.Err(); err != nil {
				log.err = err
				return
			}
			for _, ev := range resp.Events {
				log.revs = append(log.revs, ev.Kv.ModRevision)
				log.values = append(log.values, string(ev.Kv.Value))
			}
			if len(log.revs) >= want {
				return
			}
		}
		log.err = ctx.Err()
	}()
	return out
}
