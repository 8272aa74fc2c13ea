package etcdv3

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestLeaseRevokeDeletesItsKeys(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		l, err := c.Grant(ctx, 60)
		require.NoError(t, err)
		require.Equal(t, int64(60), l.TTL)
		_, err = c.Put(ctx, "/leased", "v", clientv3.WithLease(l.ID))
		require.NoError(t, err)

		g, err := c.Get(ctx, "/leased")
		require.NoError(t, err)
		require.Equal(t, int64(l.ID), g.Kvs[0].Lease)

		ttl, err := c.TimeToLive(ctx, l.ID, clientv3.WithAttachedKeys())
		require.NoError(t, err)
		require.Equal(t, int64(60), ttl.GrantedTTL)
		require.Greater(t, ttl.TTL, int64(0))
		require.Equal(t, [][]byte{[]byte("/leased")}, ttl.Keys)

		leases, err := c.Leases(ctx)
		require.NoError(t, err)
		require.Contains(t, leases.Leases, clientv3.LeaseStatus{ID: l.ID})

		_, err = c.Revoke(ctx, l.ID)
		require.NoError(t, err)
		g, err = c.Get(ctx, "/leased")
		require.NoError(t, err)
		require.Empty(t, g.Kvs)

		gone, err := c.TimeToLive(ctx, l.ID)
		require.NoError(t, err)
		require.Equal(t, int64(-1), gone.TTL)
		_, err = c.Revoke(ctx, l.ID)
		require.ErrorIs(t, err, rpctypes.ErrLeaseNotFound)
		_, err = c.KeepAliveOnce(ctx, l.ID)
		require.ErrorIs(t, err, rpctypes.ErrLeaseNotFound)
	})
}

func TestLeaseKeepAlive(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		l, err := c.Grant(ctx, 30)
		require.NoError(t, err)
		once, err := c.KeepAliveOnce(ctx, l.ID)
		require.NoError(t, err)
		require.Equal(t, int64(30), once.TTL)

		ch, err := c.KeepAlive(ctx, l.ID)
		require.NoError(t, err)
		select {
		case resp := <-ch:
			require.NotNil(t, resp)
			require.Equal(t, l.ID, resp.ID)
			require.Equal(t, int64(30), resp.TTL)
		case <-time.After(10 * time.Second):
			t.Fatal("no keepalive response within 10s")
		}
	})
}

func TestLeaseExpiryDeletesItsKeys(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		l, err := c.Grant(ctx, 1) // etcd raises it to its minimum TTL
		require.NoError(t, err)
		_, err = c.Put(ctx, "/expiring", "v", clientv3.WithLease(l.ID))
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			g, err := c.Get(ctx, "/expiring")
			return err == nil && len(g.Kvs) == 0
		}, 20*time.Second, 50*time.Millisecond, "the key of an expired lease is still there")
	})
}
