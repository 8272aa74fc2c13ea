package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	clientv3k "go.etcd.io/etcd/client/v3/kubernetes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// NewBranchClient returns an etcd client of one git branch that calls the
// store directly: no gRPC, no protobuf encoding, no key prefix to write and
// parse back. It is what k8s.io/apiserver's etcd3 store uses of a client:
// the Kubernetes interface (Get, List, Count, OptimisticPut,
// OptimisticDelete), KV.Get, Watch and RequestProgress, and Lease.Grant.
// Store errors are turned into what the API server expects (storeError).
func NewBranchClient(branch *gitstore.Branch, repo *gitstore.Repository) *clientv3k.Client {
	return newBranchClient(branch, repo, 0)
}

// NewBranchClientAt returns a read-only client of the branch as it was at
// revision at (a heaven read as of a revision): every read is at that
// revision (from git past the compaction point), watches see nothing
// happen, and writes are refused with 405.
func NewBranchClientAt(branch *gitstore.Branch, repo *gitstore.Repository, at int64) *clientv3k.Client {
	return newBranchClient(branch, repo, at)
}

func newBranchClient(branch *gitstore.Branch, repo *gitstore.Repository, at int64) *clientv3k.Client {
	c := clientv3.NewCtxClient(context.Background())
	bc := &branchClient{b: branch, repo: repo, at: at, watchers: map[*gitstore.Watcher]struct{}{}}
	c.KV, c.Watcher, c.Lease = kvClient{bc}, bc, bc
	return &clientv3k.Client{Client: c, Kubernetes: kubernetesClient{bc}}
}

// MaxRequestBytes is the largest write the branch client takes (key and
// value), as etcd's --max-request-bytes: a larger one is answered with 413
// and the limit.
const MaxRequestBytes = 1536 * 1024

type branchClient struct {
	b    *gitstore.Branch
	repo *gitstore.Repository
	at   int64 // > 0: read-only, every read at this revision

	mu       sync.Mutex
	watchers map[*gitstore.Watcher]struct{} // for RequestProgress
}

// kubernetesClient and kvClient are the branch client's two faces with a
// Get method each.
type (
	kubernetesClient struct{ *branchClient }
	kvClient         struct{ *branchClient }
)

var (
	_ clientv3k.Interface = kubernetesClient{}
	_ clientv3.KV         = kvClient{}
	_ clientv3.Watcher    = (*branchClient)(nil)
	_ clientv3.Lease      = (*branchClient)(nil)
)

// ---- the Kubernetes interface: what the API server's store calls most ----

func (c kubernetesClient) Get(ctx context.Context, key string, opts clientv3k.GetOptions) (clientv3k.GetResponse, error) {
	res, err := c.read(ctx, &gitstore.RangeRequest{Key: key, Revision: opts.Revision, Limit: 1})
	if err != nil {
		return clientv3k.GetResponse{}, storeError(err)
	}
	out := clientv3k.GetResponse{Revision: res.Revision}
	if len(res.KVs) == 1 {
		out.KV = toKV(&res.KVs[0])
	}
	return out, nil
}

func (c kubernetesClient) List(ctx context.Context, prefix string, opts clientv3k.ListOptions) (clientv3k.ListResponse, error) {
	start := prefix
	if opts.Continue != "" {
		start = opts.Continue
	}
	res, err := c.read(ctx, &gitstore.RangeRequest{Key: start, End: clientv3.GetPrefixRangeEnd(prefix), Limit: opts.Limit, Revision: opts.Revision})
	if err != nil {
		return clientv3k.ListResponse{}, storeError(err)
	}
	return clientv3k.ListResponse{Kvs: toKVs(res.KVs), Count: res.Count, Revision: res.Revision}, nil
}

func (c kubernetesClient) Count(ctx context.Context, prefix string, _ clientv3k.CountOptions) (int64, error) {
	res, err := c.read(ctx, &gitstore.RangeRequest{Key: prefix, End: clientv3.GetPrefixRangeEnd(prefix), CountOnly: true})
	if err != nil {
		return 0, storeError(err)
	}
	return res.Count, nil
}

func (c kubernetesClient) OptimisticPut(ctx context.Context, key string, value []byte, expectedRevision int64, opts clientv3k.PutOptions) (clientv3k.PutResponse, error) {
	if c.at > 0 {
		return clientv3k.PutResponse{}, c.readOnly()
	}
	if n := len(key) + len(value); n > MaxRequestBytes {
		return clientv3k.PutResponse{}, tooLargeError{size: n}
	}
	put := gitstore.Op{Put: &gitstore.PutOp{Key: key, Value: value, Lease: int64(opts.LeaseID)}}
	res, err := c.b.Txn(ctx, modRevisionIs(ctx, key, expectedRevision, put, opts.GetOnFailure))
	if err != nil {
		return clientv3k.PutResponse{}, storeError(err)
	}
	out := clientv3k.PutResponse{Succeeded: res.Succeeded, Revision: res.Revision}
	if opts.GetOnFailure && !res.Succeeded {
		out.KV = onlyKV(res)
	}
	return out, nil
}

func (c kubernetesClient) OptimisticDelete(ctx context.Context, key string, expectedRevision int64, opts clientv3k.DeleteOptions) (clientv3k.DeleteResponse, error) {
	if c.at > 0 {
		return clientv3k.DeleteResponse{}, c.readOnly()
	}
	del := gitstore.Op{Delete: &gitstore.DeleteOp{Key: key}}
	res, err := c.b.Txn(ctx, modRevisionIs(ctx, key, expectedRevision, del, opts.GetOnFailure))
	if err != nil {
		return clientv3k.DeleteResponse{}, storeError(err)
	}
	out := clientv3k.DeleteResponse{Succeeded: res.Succeeded, Revision: res.Revision}
	if opts.GetOnFailure && !res.Succeeded {
		out.KV = onlyKV(res)
	}
	return out, nil
}

// read answers a read: at the requested revision (a heaven's reads at
// any revision since its first commit are answered, from git past the
// compaction point), or for a read-only client at its revision.
func (c *branchClient) read(ctx context.Context, req *gitstore.RangeRequest) (*gitstore.RangeResult, error) {
	if c.at > 0 && (req.Revision <= 0 || req.Revision > c.at) {
		req.Revision = c.at
	}
	res, err := c.b.Range(ctx, req)
	if errors.Is(err, gitstore.ErrCompacted) {
		res, err = c.b.RangeCompacted(req)
	}
	if err == nil && c.at > 0 {
		res.Revision = c.at
	}
	return res, err
}

// readOnly is the answer of a read-only client to a write.
func (c *branchClient) readOnly() error {
	return statusError{code: http.StatusMethodNotAllowed, reason: metav1.StatusReasonMethodNotAllowed,
		err: fmt.Errorf("heaven %s as of revision %d is read-only", c.b.Name(), c.at)}
}

// modRevisionIs is the API server's optimistic write: then if key's mod
// revision is rev (0: absent), else (if asked) read it. The user of the
// request (the API server passes its context down) authors the commit.
func modRevisionIs(ctx context.Context, key string, rev int64, then gitstore.Op, getOnFailure bool) *gitstore.Txn {
	txn := &gitstore.Txn{
		If:   []gitstore.Compare{{Key: key, Target: gitstore.CompareModRevision, Result: gitstore.Equal, Number: rev}},
		Then: []gitstore.Op{then},
	}
	if u, ok := request.UserFrom(ctx); ok {
		txn.Author = u.GetName()
	}
	if getOnFailure {
		txn.Else = []gitstore.Op{{Range: &gitstore.RangeRequest{Key: key}}}
	}
	return txn
}

func onlyKV(res *gitstore.TxnResult) *mvccpb.KeyValue {
	if len(res.Results) == 0 {
		return nil
	}
	if r := res.Results[0].Range; r != nil && len(r.KVs) == 1 {
		return toKV(&r.KVs[0])
	}
	return nil
}

// toKV gives a store KeyValue the API server's type. The value is shared,
// not copied: neither side changes it.
func toKV(kv *gitstore.KeyValue) *mvccpb.KeyValue {
	if kv == nil {
		return nil
	}
	return &mvccpb.KeyValue{Key: []byte(kv.Key), Value: kv.Value, CreateRevision: kv.CreateRevision,
		ModRevision: kv.ModRevision, Version: kv.Version, Lease: kv.Lease}
}

func toKVs(kvs []gitstore.KeyValue) []*mvccpb.KeyValue {
	out := make([]*mvccpb.KeyValue, len(kvs))
	for i := range kvs {
		out[i] = toKV(&kvs[i])
	}
	return out
}

func toEvents(evs []gitstore.Event) []*clientv3.Event {
	out := make([]*clientv3.Event, len(evs))
	for i := range evs {
		ev := &evs[i]
		e := &clientv3.Event{Type: mvccpb.PUT, Kv: toKV(&ev.KV), PrevKv: toKV(ev.PrevKV)}
		if ev.Type == gitstore.EventDelete {
			e.Type = mvccpb.DELETE
		}
		out[i] = e
	}
	return out
}

// ---- clientv3.KV: reads with options; the API server writes through the
// Kubernetes interface ----

func (c kvClient) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	op := clientv3.OpGet(key, opts...)
	if op.IsSortSet() {
		return nil, unimplemented("sorted ranges")
	}
	res, err := c.read(ctx, &gitstore.RangeRequest{
		Key: string(op.KeyBytes()), End: string(op.RangeBytes()), Revision: op.Rev(), Limit: op.Limit(),
		KeysOnly: op.IsKeysOnly(), CountOnly: op.IsCountOnly(),
		MinModRevision: op.MinModRev(), MaxModRevision: op.MaxModRev(),
		MinCreateRevision: op.MinCreateRev(), MaxCreateRevision: op.MaxCreateRev(),
	})
	if err != nil {
		return nil, storeError(err)
	}
	return &clientv3.GetResponse{Header: &pb.ResponseHeader{Revision: res.Revision}, Kvs: toKVs(res.KVs),
		Count: res.Count, More: res.More}, nil
}

// GetStream is not offered: the API server then lists with List.
func (c kvClient) GetStream(context.Context, string, ...clientv3.OpOption) (clientv3.GetStreamChan, error) {
	return nil, unimplemented("RangeStream")
}

func (c kvClient) Put(context.Context, string, string, ...clientv3.OpOption) (*clientv3.PutResponse, error) {
	return nil, unimplemented("Put: write through the Kubernetes interface")
}

func (c kvClient) Delete(context.Context, string, ...clientv3.OpOption) (*clientv3.DeleteResponse, error) {
	return nil, unimplemented("Delete: write through the Kubernetes interface")
}

func (c kvClient) Compact(context.Context, int64, ...clientv3.CompactOption) (*clientv3.CompactResponse, error) {
	return nil, unimplemented("Compact: heaven-server compacts branches itself")
}

func (c kvClient) Do(context.Context, clientv3.Op) (clientv3.OpResponse, error) {
	return clientv3.OpResponse{}, unimplemented("Do")
}

func (c kvClient) Txn(context.Context) clientv3.Txn { return unimplementedTxn{} }

// ---- clientv3.Watcher ----

// progressNotifyInterval is etcd's: how often a watch that asked for
// progress notifications gets one while idle.
const progressNotifyInterval = 10 * time.Minute

func (c *branchClient) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	op := clientv3.OpGet(key, opts...)
	out := make(chan clientv3.WatchResponse, 16)
	if c.at > 0 {
		// Nothing happens in the past.
		go func() {
			<-ctx.Done()
			close(out)
		}()
		return out
	}
	req := gitstore.WatchRequest{Key: string(op.KeyBytes()), End: string(op.RangeBytes()), StartRevision: op.Rev(),
		PrevKV: op.IsPrevKV(), NoPut: op.IsFilterPut(), NoDelete: op.IsFilterDelete()}
	if op.IsProgressNotify() {
		req.ProgressEvery = progressNotifyInterval
	}
	// The store's watcher hands its responses over in its own goroutine:
	// one goroutine per watch, not two.
	deliver := func(wctx context.Context, resp gitstore.WatchResponse) bool {
		wr := clientv3.WatchResponse{
			Header:          &pb.ResponseHeader{Revision: resp.Revision},
			Events:          toEvents(resp.Events),
			CompactRevision: resp.CompactRevision,
			Canceled:        resp.Canceled,
			CancelReason:    resp.CancelReason,
		}
		select {
		case out <- wr:
			return true
		case <-wctx.Done():
			return false
		}
	}
	ended := func(w *gitstore.Watcher) {
		c.mu.Lock() // held by Watch until w is registered
		delete(c.watchers, w)
		c.mu.Unlock()
		close(out)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w, err := c.b.WatchFunc(ctx, req, deliver, ended)
	if err != nil {
		out <- clientv3.WatchResponse{Canceled: true, CancelReason: storeError(err).Error()}
		close(out)
		return out
	}
	c.watchers[w] = struct{}{}
	return out
}

// RequestProgress asks every watch of the client for a progress
// notification (the API server asks with the context of its watches; one
// client per heaven makes every watch of the heaven the same).
func (c *branchClient) RequestProgress(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		w.RequestProgress()
	}
	return nil
}

// Close ends the client's watches.
func (c *branchClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		w.Close()
	}
	return nil
}

// ---- clientv3.Lease: leased keys live in the store's memory only ----

func (c *branchClient) Grant(_ context.Context, ttl int64) (*clientv3.LeaseGrantResponse, error) {
	if c.at > 0 {
		return nil, c.readOnly()
	}
	l, err := c.repo.LeaseGrant(0, ttl)
	if err != nil {
		return nil, storeError(err)
	}
	return &clientv3.LeaseGrantResponse{ResponseHeader: &pb.ResponseHeader{Revision: c.b.Revision()}, ID: clientv3.LeaseID(l.ID), TTL: l.TTL}, nil
}

func (c *branchClient) Revoke(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseRevokeResponse, error) {
	if err := c.repo.LeaseRevoke(ctx, int64(id)); err != nil {
		return nil, storeError(err)
	}
	return &clientv3.LeaseRevokeResponse{Header: &pb.ResponseHeader{Revision: c.b.Revision()}}, nil
}

func (c *branchClient) TimeToLive(_ context.Context, id clientv3.LeaseID, _ ...clientv3.LeaseOption) (*clientv3.LeaseTimeToLiveResponse, error) {
	granted, remaining, _, err := c.repo.LeaseTimeToLive(int64(id), false)
	if err != nil {
		return nil, storeError(err)
	}
	return &clientv3.LeaseTimeToLiveResponse{ID: id, TTL: remaining, GrantedTTL: granted}, nil
}

func (c *branchClient) Leases(context.Context) (*clientv3.LeaseLeasesResponse, error) {
	var out clientv3.LeaseLeasesResponse
	for _, id := range c.repo.Leases() {
		out.Leases = append(out.Leases, clientv3.LeaseStatus{ID: clientv3.LeaseID(id)})
	}
	return &out, nil
}

func (c *branchClient) KeepAlive(context.Context, clientv3.LeaseID) (<-chan *clientv3.LeaseKeepAliveResponse, error) {
	return nil, unimplemented("KeepAlive: the API server grants leases and lets them expire")
}

func (c *branchClient) KeepAliveOnce(_ context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	ttl, err := c.repo.LeaseKeepAlive(int64(id))
	if err != nil {
		return nil, storeError(err)
	}
	return &clientv3.LeaseKeepAliveResponse{ID: id, TTL: ttl}, nil
}

// ---- errors ----

func unimplemented(what string) error {
	return status.Errorf(codes.Unimplemented, "heaven: %s is not offered by a heaven's storage client", what)
}

type unimplementedTxn struct{}

func (unimplementedTxn) If(...clientv3.Cmp) clientv3.Txn  { return unimplementedTxn{} }
func (unimplementedTxn) Then(...clientv3.Op) clientv3.Txn { return unimplementedTxn{} }
func (unimplementedTxn) Else(...clientv3.Op) clientv3.Txn { return unimplementedTxn{} }
func (unimplementedTxn) Commit() (*clientv3.TxnResponse, error) {
	return nil, unimplemented("Txn: write through the Kubernetes interface")
}

// storeError turns a store error into what k8s.io/apiserver's etcd3 store
// expects: etcd's own errors where it compares with them (compaction,
// future revisions), errors carrying a Kubernetes Status with the right
// code for the rest, and context errors as they are.
func storeError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, gitstore.ErrCompacted):
		return rpctypes.ErrCompacted // compared with ==
	case errors.Is(err, gitstore.ErrFutureRev):
		return rpctypes.ErrFutureRev
	case errors.Is(err, gitstore.ErrUnavailable), errors.Is(err, gitstore.ErrBusy), errors.Is(err, gitstore.ErrClosed):
		return statusError{code: http.StatusServiceUnavailable, reason: metav1.StatusReasonServiceUnavailable, retryAfter: 1, err: err}
	case errors.Is(err, gitstore.ErrLeaseNotFound):
		return rpctypes.ErrLeaseNotFound
	}
	return statusError{code: http.StatusInternalServerError, reason: metav1.StatusReasonInternalError, err: err}
}
