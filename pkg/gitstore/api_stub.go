package gitstore

// Temporary stubs: the public surface, so that the facade can be written
// against it while the store is being built. Replaced by the real files.

import (
	"context"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Options configure a Repository.
type Options struct {
	// PollInterval is how often open branches look for commits made by
	// others (a git push, a merge). Default 250ms.
	PollInterval time.Duration
}

// Repository is one bare git repository holding many branch keyspaces.
type Repository struct{}

// Open opens the bare repository at dir, creating it when missing.
func Open(dir string, opts Options) (*Repository, error) { panic("stub") }

// Branch opens (or returns the already open) keyspace of branch name. A
// branch that does not exist yet starts empty at revision 1 and is created by
// its first write.
func (r *Repository) Branch(ctx context.Context, name string) (*Branch, error) { panic("stub") }

// CloseBranch stops serving a branch: its watchers are cancelled, its
// memory freed. The git branch stays.
func (r *Repository) CloseBranch(name string) error { panic("stub") }

// Close closes every branch and the repository.
func (r *Repository) Close() error { panic("stub") }

// Lease is a granted lease.
type Lease struct {
	ID  int64
	TTL int64 // seconds
}

// LeaseGrant grants a lease; id 0 picks one.
func (r *Repository) LeaseGrant(id, ttlSeconds int64) (Lease, error) { panic("stub") }

// LeaseRevoke revokes a lease and deletes every key attached to it (one
// delete revision per branch holding such keys).
func (r *Repository) LeaseRevoke(ctx context.Context, id int64) error { panic("stub") }

// LeaseKeepAlive renews a lease and returns its TTL.
func (r *Repository) LeaseKeepAlive(id int64) (ttl int64, err error) { panic("stub") }

// LeaseTimeToLive reports a lease: granted and remaining TTL in seconds and,
// when keys is set, its keys (as the client wrote them, per branch; see
// LeaseKey).
func (r *Repository) LeaseTimeToLive(id int64, keys bool) (granted, remaining int64, attached []LeaseKey, err error) {
	panic("stub")
}

// LeaseKey is a key attached to a lease.
type LeaseKey struct {
	Branch string
	Key    []byte
}

// Leases lists the IDs of live leases.
func (r *Repository) Leases() []int64 { panic("stub") }

// Branch is the keyspace of one git branch. All methods are safe for
// concurrent use.
type Branch struct{}

func (b *Branch) Name() string { panic("stub") }

// Revision is the current revision.
func (b *Branch) Revision() int64 { panic("stub") }

// CompactRevision is the revision of the last compaction (0 if none).
func (b *Branch) CompactRevision() int64 { panic("stub") }

// Range reads keys at the current or an earlier revision. Errors:
// ErrCompacted, ErrFutureRev. The response header carries only Revision.
func (b *Branch) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	panic("stub")
}

// Put writes one key; returns after the write is durable.
func (b *Branch) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	panic("stub")
}

// DeleteRange deletes keys; returns after the delete is durable.
func (b *Branch) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	panic("stub")
}

// Txn evaluates compares and applies then/else; a txn that writes takes one
// revision and returns after it is durable.
func (b *Branch) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	panic("stub")
}

// Compact discards history before rev. Errors: ErrCompacted (already
// compacted at or after rev), ErrFutureRev.
func (b *Branch) Compact(ctx context.Context, rev int64) error { panic("stub") }

// WatchRequest selects what a watcher sees.
type WatchRequest struct {
	Key, RangeEnd []byte
	// StartRevision 0 means "from the next revision".
	StartRevision int64
	PrevKV        bool
	NoPut         bool
	NoDelete      bool
}

// WatchResponse is one delivery: events of one or more whole revisions in
// order, or a progress notification, or the end of the watch.
type WatchResponse struct {
	Events []*mvccpb.Event
	// Revision is the branch revision the response is current to: for events
	// the revision of the last one (or later); for progress, every event up
	// to it has been delivered.
	Revision int64
	Progress bool
	// CompactRevision is set (and the watch ended) when StartRevision was
	// compacted.
	CompactRevision int64
	// Canceled: the watch ended (branch closed, compacted, or too slow).
	Canceled     bool
	CancelReason string
}

// Watcher delivers WatchResponses in revision order without gaps.
type Watcher struct{}

// Watch starts a watcher. A StartRevision older than the compaction point
// yields one response with CompactRevision set, then the channel closes.
func (b *Branch) Watch(ctx context.Context, r WatchRequest) (*Watcher, error) { panic("stub") }

// Responses is closed when the watch ends.
func (w *Watcher) Responses() <-chan WatchResponse { panic("stub") }

// RequestProgress asks for a Progress response, delivered after every event
// up to the current revision.
func (w *Watcher) RequestProgress() { panic("stub") }

// Close ends the watch.
func (w *Watcher) Close() { panic("stub") }
