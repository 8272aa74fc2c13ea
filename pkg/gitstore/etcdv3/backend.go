package etcdv3

import (
	"context"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// backend is the part of *gitstore.Repository the facade uses. It exists so
// the facade can be exercised against a reference MVCC store in tests; in
// production it is always gitBackend.
type backend interface {
	branch(ctx context.Context, name string) (keyspace, error)
	leaseGrant(id, ttlSeconds int64) (gitstore.Lease, error)
	leaseRevoke(ctx context.Context, id int64) error
	leaseKeepAlive(id int64) (ttl int64, err error)
	leaseTimeToLive(id int64, keys bool) (granted, remaining int64, attached []gitstore.LeaseKey, err error)
	leases() []int64
}

// keyspace is the part of *gitstore.Branch the facade uses. Keys are the
// store's keys (in prefix mode: without the branch component).
type keyspace interface {
	Revision() int64
	Range(ctx context.Context, r *gitstore.RangeRequest) (*gitstore.RangeResult, error)
	Txn(ctx context.Context, t *gitstore.Txn) (*gitstore.TxnResult, error)
	Compact(ctx context.Context, rev int64) error
	Watch(ctx context.Context, r gitstore.WatchRequest) (watcher, error)
}

// watcher is *gitstore.Watcher. RequestProgress must not block on the
// consumer of Responses: the watch stream calls it from the goroutine that
// also forwards other watchers' responses.
type watcher interface {
	Responses() <-chan gitstore.WatchResponse
	RequestProgress()
	Close()
}

// gitBackend adapts *gitstore.Repository to backend.
type gitBackend struct{ repo *gitstore.Repository }

func (g gitBackend) branch(ctx context.Context, name string) (keyspace, error) {
	b, err := g.repo.Branch(ctx, name)
	if err != nil {
		return nil, err
	}
	return gitBranch{b}, nil
}

func (g gitBackend) leaseGrant(id, ttl int64) (gitstore.Lease, error) {
	return g.repo.LeaseGrant(id, ttl)
}

func (g gitBackend) leaseRevoke(ctx context.Context, id int64) error {
	return g.repo.LeaseRevoke(ctx, id)
}

func (g gitBackend) leaseKeepAlive(id int64) (int64, error) { return g.repo.LeaseKeepAlive(id) }

func (g gitBackend) leaseTimeToLive(id int64, keys bool) (int64, int64, []gitstore.LeaseKey, error) {
	return g.repo.LeaseTimeToLive(id, keys)
}

func (g gitBackend) leases() []int64 { return g.repo.Leases() }

// gitBranch adapts *gitstore.Branch to keyspace; only Watch differs, by
// returning the interface.
type gitBranch struct{ *gitstore.Branch }

func (b gitBranch) Watch(ctx context.Context, r gitstore.WatchRequest) (watcher, error) {
	w, err := b.Branch.Watch(ctx, r)
	if err != nil {
		return nil, err
	}
	return w, nil
}
