package etcdv3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

var _ pb.WatchServer = (*watchServer)(nil)

// watchServer serves etcd's bidirectional Watch stream. Each stream has a
// receive loop (create, cancel and progress requests; it creates store
// watchers) and a send loop (the only goroutine that sends, and the owner of
// the stream's watches), plus one forwarder per watch that moves the store
// watcher's responses to the send loop in order.
type watchServer struct {
	pb.UnimplementedWatchServer
	s *Server
}

// watchStream is one client stream.
type watchStream struct {
	s      *Server
	stream pb.Watch_WatchServer
	logger klog.Logger

	ctrl    chan any      // from the receive loop: created, failed, cancelReq, progressReq
	deliv   chan delivery // from the forwarders
	recvErr chan error

	// idMu guards ids, shared by the receive loop (allocation) and the send
	// loop (release).
	idMu   sync.Mutex
	ids    map[int64]bool
	nextID int64

	// Owned by the send loop.
	watches       map[int64]*watch
	progress      []*progressRequest
	lastBroadcast int64
}

// watch is one watcher of a stream; after creation only the send loop
// touches it.
type watch struct {
	id             int64
	branch         string
	ks             keyspace
	w              watcher
	progressNotify bool
	done           chan struct{} // closed when removed; stops the forwarder

	// delivered: every event of this watch up to here has been sent.
	// sent: the revision of the last event sent.
	delivered, sent int64
	// eventsSinceTick elides the next periodic progress notification;
	// notifyPending says one was asked of the store.
	eventsSinceTick, notifyPending bool
}

type delivery struct {
	wt     *watch
	resp   gitstore.WatchResponse
	closed bool // the store closed the channel
}

type (
	created struct {
		wt  *watch
		rev int64
	}
	failed      struct{ resp *pb.WatchResponse }
	cancelReq   struct{ id int64 }
	progressReq struct{}
)

func (ws *watchServer) Watch(stream pb.Watch_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	st := &watchStream{
		s:       ws.s,
		stream:  stream,
		logger:  klog.FromContext(ctx).WithValues("stream", "watch"),
		ctrl:    make(chan any, 16),
		deliv:   make(chan delivery),
		recvErr: make(chan error, 1),
		ids:     map[int64]bool{},
		watches: map[int64]*watch{},
	}
	go st.recvLoop(ctx)
	return st.sendLoop(ctx)
}

func (st *watchStream) recvLoop(ctx context.Context) {
	for {
		req, err := st.stream.Recv()
		if errors.Is(err, io.EOF) {
			// The client sends no more; keep sending until it goes away.
			return
		}
		if err != nil {
			st.recvErr <- err
			return
		}
		var msg any
		switch r := req.RequestUnion.(type) {
		case *pb.WatchRequest_CreateRequest:
			if r.CreateRequest == nil {
				continue
			}
			msg = st.create(ctx, r.CreateRequest)
		case *pb.WatchRequest_CancelRequest:
			if r.CancelRequest == nil {
				continue
			}
			msg = cancelReq{id: r.CancelRequest.WatchId}
		case *pb.WatchRequest_ProgressRequest:
			if r.ProgressRequest == nil {
				continue
			}
			msg = progressReq{}
		default:
			st.logger.V(2).Info("Ignoring unknown watch request", "type", r)
			continue
		}
		select {
		case st.ctrl <- msg:
		case <-ctx.Done():
			return
		}
	}
}

// create validates and routes a create request and starts the store watcher;
// it answers created, or failed (WatchId -1, as etcd does).
func (st *watchStream) create(ctx context.Context, creq *pb.WatchCreateRequest) any {
	key, end := creq.Key, creq.RangeEnd
	if len(key) == 0 {
		key = []byte{0} // etcd: the smallest key
	}
	if creq.StartRevision < 0 {
		return st.fail(ctx, rpctypes.ErrCompacted.Error())
	}
	if len(end) != 0 && !(len(end) == 1 && end[0] == 0) && bytes.Compare(key, end) >= 0 {
		return st.fail(ctx, "mvcc: watcher range is empty")
	}
	sc := st.s.rt.newScope()
	key, end = sc.interval(key, end)
	name, ks, err := st.s.open(ctx, sc)
	if err != nil {
		return st.fail(ctx, status.Convert(toGRPCError(ctx, "Watch", err)).Message())
	}
	id, ok := st.allocate(creq.WatchId)
	if !ok {
		return st.fail(ctx, "mvcc: duplicate watch ID provided on the WatchStream")
	}
	// Pin the start: "from now" is the revision after rev, so the created
	// header (rev) tells a resuming client exactly where the watch began.
	rev := ks.Revision()
	start := creq.StartRevision
	if start == 0 {
		start = rev + 1
	}
	req := gitstore.WatchRequest{Key: string(key), End: string(end), StartRevision: start, PrevKV: creq.PrevKv}
	for _, f := range creq.Filters {
		switch f {
		case pb.WatchCreateRequest_NOPUT:
			req.NoPut = true
		case pb.WatchCreateRequest_NODELETE:
			req.NoDelete = true
		}
	}
	w, err := ks.Watch(ctx, req)
	if err != nil {
		st.release(id)
		return st.fail(ctx, status.Convert(toGRPCError(ctx, "Watch", err)).Message())
	}
	return created{rev: rev, wt: &watch{
		id:             id,
		branch:         name,
		ks:             ks,
		w:              w,
		progressNotify: creq.ProgressNotify,
		done:           make(chan struct{}),
		delivered:      min(start-1, rev),
	}}
}

func (st *watchStream) fail(ctx context.Context, reason string) failed {
	return failed{resp: &pb.WatchResponse{
		Header:       st.s.hdr.at(st.s.revision(ctx)),
		WatchId:      invalidWatchID,
		Created:      true,
		Canceled:     true,
		CancelReason: reason,
	}}
}

// allocate reserves the requested watch ID, or the lowest free one when the
// client asked for none (0, etcd's AutoWatchID).
func (st *watchStream) allocate(want int64) (int64, bool) {
	st.idMu.Lock()
	defer st.idMu.Unlock()
	if want != 0 {
		if st.ids[want] {
			return 0, false
		}
		st.ids[want] = true
		return want, true
	}
	for st.ids[st.nextID] {
		st.nextID++
	}
	id := st.nextID
	st.ids[id] = true
	st.nextID++
	return id, true
}

func (st *watchStream) release(id int64) {
	st.idMu.Lock()
	defer st.idMu.Unlock()
	delete(st.ids, id)
}

// forward moves one store watcher's responses to the send loop, in order.
func (st *watchStream) forward(ctx context.Context, wt *watch) {
	ch := wt.w.Responses()
	for {
		var d delivery
		select {
		case r, ok := <-ch:
			d = delivery{wt: wt, resp: r, closed: !ok}
		case <-wt.done:
			return
		case <-ctx.Done():
			return
		}
		select {
		case st.deliv <- d:
		case <-wt.done:
			return
		case <-ctx.Done():
			return
		}
		if d.closed {
			return
		}
	}
}

// progressInterval is etcd's: the configured interval plus up to 10% jitter,
// so that watchers created together do not report together.
func progressInterval(d time.Duration) time.Duration {
	return d + rand.N(d/10+1)
}
