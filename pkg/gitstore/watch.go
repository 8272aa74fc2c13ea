package gitstore

import (
	"bytes"
	"context"
	"sync"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

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
	// Revision: for events, the revision up to which this watcher has now
	// seen everything; for progress, every event up to it has been delivered.
	Revision int64
	Progress bool
	// CompactRevision is set (and the watch ended) when the watcher needed
	// history that was compacted.
	CompactRevision int64
	// Canceled: the watch ended (branch closed or compacted).
	Canceled     bool
	CancelReason string
}

// Watcher delivers WatchResponses in revision order without gaps.
//
// Each watcher reads the branch's change log from its own position in its
// own goroutine, so a slow watcher only falls behind; it never holds up a
// writer or another watcher, and it costs no memory beyond its position.
type Watcher struct {
	b    *Branch
	req  WatchRequest
	out  chan WatchResponse
	next int64 // next revision to deliver

	mu       sync.Mutex
	progress bool // a progress response is owed
	wake     chan struct{}

	cancel context.CancelFunc
	ctx    context.Context
}

// watchBatchRevisions bounds how many revisions one response covers.
const watchBatchRevisions = 256

// Watch starts a watcher. A StartRevision older than the compaction point
// yields one response with CompactRevision set, then the channel closes.
func (b *Branch) Watch(ctx context.Context, r WatchRequest) (*Watcher, error) {
	if len(r.Key) == 0 {
		return nil, ErrEmptyKey
	}
	b.mu.RLock()
	closed, committed := b.closedErr, b.committed
	b.mu.RUnlock()
	if closed != nil {
		return nil, closed
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{b: b, req: r, out: make(chan WatchResponse, 16), next: r.StartRevision,
		wake: make(chan struct{}, 1), ctx: wctx, cancel: cancel}
	if w.next == 0 {
		w.next = committed + 1
	}
	go w.run()
	return w, nil
}

// Responses is closed when the watch ends.
func (w *Watcher) Responses() <-chan WatchResponse { return w.out }

// RequestProgress asks for a Progress response, delivered after every event
// up to the current revision.
func (w *Watcher) RequestProgress() {
	w.mu.Lock()
	w.progress = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Close ends the watch.
func (w *Watcher) Close() { w.cancel() }

func (w *Watcher) run() {
	defer close(w.out)
	for {
		resp, changed, ok := w.collect()
		if !ok {
			return
		}
		if resp != nil && !w.send(*resp) {
			return
		}
		if resp != nil && (resp.Canceled || resp.CompactRevision > 0) {
			return
		}
		if resp != nil && len(resp.Events) > 0 {
			continue // there may be more to catch up on
		}
		select {
		case <-changed:
		case <-w.wake:
		case <-w.ctx.Done():
			return
		}
	}
}

func (w *Watcher) send(r WatchResponse) bool {
	select {
	case w.out <- r:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// collect gathers the next response: events from w.next on, or a progress
// notification when caught up and one is owed. changed is the channel to
// wait on when there is nothing to send.
func (w *Watcher) collect() (resp *WatchResponse, changed <-chan struct{}, ok bool) {
	b := w.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closedErr != nil {
		return &WatchResponse{Canceled: true, CancelReason: b.closedErr.Error()}, nil, true
	}
	if w.next < b.x.compact {
		return &WatchResponse{CompactRevision: b.x.compact, Canceled: true, Revision: b.committed}, nil, true
	}
	var events []*mvccpb.Event
	for w.next <= b.committed && len(events) == 0 {
		advanced := false
		for _, rc := range b.x.changesFrom(w.next, watchBatchRevisions) {
			if rc.rev > b.committed {
				break
			}
			for _, c := range rc.changes {
				ev, err := w.event(c)
				if err != nil {
					return &WatchResponse{Canceled: true, CancelReason: err.Error()}, nil, true
				}
				if ev != nil {
					events = append(events, ev)
				}
			}
			w.next, advanced = rc.rev+1, true
		}
		if !advanced {
			// No change between next and committed.
			w.next = b.committed + 1
		}
	}
	if len(events) > 0 {
		return &WatchResponse{Events: events, Revision: w.next - 1}, b.changed, true
	}
	w.mu.Lock()
	owed := w.progress
	w.progress = false
	w.mu.Unlock()
	if owed {
		return &WatchResponse{Progress: true, Revision: b.committed}, b.changed, true
	}
	return nil, b.changed, true
}

// event renders one change for this watcher, nil when filtered out.
func (w *Watcher) event(c change) (*mvccpb.Event, error) {
	k := []byte(c.key)
	if !w.matches(k) {
		return nil, nil
	}
	ev := &mvccpb.Event{Type: mvccpb.PUT}
	if c.rec.tombstone() {
		ev.Type = mvccpb.DELETE
	}
	if (ev.Type == mvccpb.PUT && w.req.NoPut) || (ev.Type == mvccpb.DELETE && w.req.NoDelete) {
		return nil, nil
	}
	kv, err := keyValue(c.key, c.rec, !c.rec.tombstone(), w.b.loadValue)
	if err != nil {
		return nil, err
	}
	ev.Kv = kv
	// As etcd: the previous value is the one at mod-1, gone once that
	// revision is compacted.
	if w.req.PrevKV && c.prev != nil && !c.prev.tombstone() && c.rec.mod-1 >= w.b.x.compact {
		if ev.PrevKv, err = keyValue(c.key, c.prev, true, w.b.loadValue); err != nil {
			return nil, err
		}
	}
	return ev, nil
}

func (w *Watcher) matches(k []byte) bool {
	switch {
	case len(w.req.RangeEnd) == 0:
		return bytes.Equal(k, w.req.Key)
	case len(w.req.RangeEnd) == 1 && w.req.RangeEnd[0] == 0:
		return bytes.Compare(k, w.req.Key) >= 0
	}
	return bytes.Compare(k, w.req.Key) >= 0 && bytes.Compare(k, w.req.RangeEnd) < 0
}
