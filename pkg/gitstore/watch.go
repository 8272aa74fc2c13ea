package gitstore

import (
	"context"
	"sync"
	"time"
)

// WatchRequest selects what a watcher sees: keys as in RangeRequest.
type WatchRequest struct {
	Key, End string
	// StartRevision 0 means "from the next revision".
	StartRevision int64
	PrevKV        bool
	NoPut         bool
	NoDelete      bool
	// ProgressEvery, if set, asks for a progress response at this
	// interval, as RequestProgress does.
	ProgressEvery time.Duration
}

// WatchResponse is one delivery: events of one or more whole revisions in
// order, or a progress notification, or the end of the watch.
type WatchResponse struct {
	Events []Event
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

	// deliver, when set, takes each response in place of out (WatchFunc);
	// ended is then called once the watch has ended.
	deliver func(context.Context, WatchResponse) bool
	ended   func(*Watcher)
	// progressEvery owes a progress response at each tick (0: never).
	progressEvery time.Duration

	cancel context.CancelFunc
	ctx    context.Context
}

// watchBatchRevisions bounds how many revisions one response covers.
const watchBatchRevisions = 256

// Watch starts a watcher. A StartRevision older than the compaction point
// yields one response with CompactRevision set, then the channel closes.
func (b *Branch) Watch(ctx context.Context, r WatchRequest) (*Watcher, error) {
	return b.watch(ctx, r, &Watcher{out: make(chan WatchResponse, 16)})
}

// WatchFunc is Watch with each response handed to deliver, in order, in
// the watcher's own goroutine, instead of sent on Responses: a consumer
// that passes responses on needs no goroutine of its own (a heaven has a
// watch per informer). deliver gets the watch's context, which ends with
// the watch, and returns false to end it. ended is called once, after the
// last deliver, in the watcher's goroutine.
func (b *Branch) WatchFunc(ctx context.Context, r WatchRequest, deliver func(context.Context, WatchResponse) bool, ended func(*Watcher)) (*Watcher, error) {
	return b.watch(ctx, r, &Watcher{deliver: deliver, ended: ended})
}

func (b *Branch) watch(ctx context.Context, r WatchRequest, w *Watcher) (*Watcher, error) {
	if r.Key == "" {
		return nil, ErrEmptyKey
	}
	b.mu.RLock()
	closed, committed := b.closedErr, b.committed
	b.mu.RUnlock()
	if closed != nil {
		return nil, closed
	}
	w.b, w.req, w.next, w.progressEvery = b, r, r.StartRevision, r.ProgressEvery
	w.wake = make(chan struct{}, 1)
	w.ctx, w.cancel = context.WithCancel(ctx)
	if w.next == 0 {
		w.next = committed + 1
	}
	go w.run()
	return w, nil
}

// Responses is closed when the watch ends; nil for a WatchFunc watcher.
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
	defer func() {
		w.cancel()
		if w.out != nil {
			close(w.out)
		}
		if w.ended != nil {
			w.ended(w)
		}
	}()
	var tick <-chan time.Time
	if w.progressEvery > 0 {
		t := time.NewTicker(w.progressEvery)
		defer t.Stop()
		tick = t.C
	}
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
		case <-tick:
			w.mu.Lock()
			w.progress = true
			w.mu.Unlock()
		case <-w.ctx.Done():
			return
		}
	}
}

func (w *Watcher) send(r WatchResponse) bool {
	if w.deliver != nil {
		return w.deliver(w.ctx, r)
	}
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
	var events []Event
	for w.next <= b.committed && len(events) == 0 {
		advanced := false
		for _, rc := range b.x.changesFrom(w.next, watchBatchRevisions) {
			if rc.rev > b.committed {
				break
			}
			for _, c := range rc.changes {
				ev, ok, err := w.event(c)
				if err != nil {
					return &WatchResponse{Canceled: true, CancelReason: err.Error()}, nil, true
				}
				if ok {
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

// event renders one change for this watcher; ok is false when filtered out.
func (w *Watcher) event(c change) (ev Event, ok bool, err error) {
	if !w.matches(c.key) {
		return Event{}, false, nil
	}
	if c.rec.tombstone() {
		ev.Type = EventDelete
	}
	if (ev.Type == EventPut && w.req.NoPut) || (ev.Type == EventDelete && w.req.NoDelete) {
		return Event{}, false, nil
	}
	if ev.KV, err = keyValue(c.key, c.rec, !c.rec.tombstone(), w.b.loadValue); err != nil {
		return Event{}, false, err
	}
	// As etcd: the previous value is the one at mod-1, gone once that
	// revision is compacted.
	if w.req.PrevKV && c.prev != nil && !c.prev.tombstone() && c.rec.mod-1 >= w.b.x.compact {
		prev, err := keyValue(c.key, c.prev, true, w.b.loadValue)
		if err != nil {
			return Event{}, false, err
		}
		ev.PrevKV = &prev
	}
	return ev, true, nil
}

func (w *Watcher) matches(k string) bool {
	switch {
	case w.req.End == "":
		return k == w.req.Key
	case w.req.End == "\x00":
		return k >= w.req.Key
	}
	return k >= w.req.Key && k < w.req.End
}
