package server

import (
	"context"
	"errors"
	"sync"
)

// fairQueue shares heaven-server's request slots among heavens, so that
// tenants loading their heavens can't starve the others: at most `slots`
// requests run at once, at most `perHeaven` of them of one heaven, and a
// freed slot goes to the next heaven with a waiting request, round robin.
// A heaven with `maxQueued` requests waiting gets errTooManyRequests (429)
// for more. Long-running requests (watches) hold no slot.
//
// It is the part of API Priority and Fairness that matters here, keyed by
// heaven; each heaven's own API server has no limits of its own.
type fairQueue struct {
	slots, perHeaven, maxQueued int
	// waited and rejected, if set, count requests that waited for a slot
	// and requests refused with 429, by heaven (metrics).
	waited, rejected func(heaven string)

	mu      sync.Mutex
	free    int
	running map[string]int
	waiting map[string][]chan struct{}
	ring    []string // heavens with waiting requests, in turn
}

var errTooManyRequests = errors.New("too many requests for this heaven")

func newFairQueue(slots, perHeaven, maxQueued int) *fairQueue {
	return &fairQueue{slots: slots, perHeaven: perHeaven, maxQueued: maxQueued, free: slots,
		running: map[string]int{}, waiting: map[string][]chan struct{}{}}
}

// acquire waits for a slot for a request to heaven, or until ctx ends; the
// caller must call release once the request is done.
func (q *fairQueue) acquire(ctx context.Context, heaven string) (release func(), err error) {
	release = func() { q.release(heaven) }
	q.mu.Lock()
	if q.free > 0 && q.running[heaven] < q.perHeaven && len(q.waiting[heaven]) == 0 {
		q.free--
		q.running[heaven]++
		q.mu.Unlock()
		return release, nil
	}
	if len(q.waiting[heaven]) >= q.maxQueued {
		q.mu.Unlock()
		if q.rejected != nil {
			q.rejected(heaven)
		}
		return nil, errTooManyRequests
	}
	granted := make(chan struct{})
	if len(q.waiting[heaven]) == 0 {
		q.ring = append(q.ring, heaven)
	}
	q.waiting[heaven] = append(q.waiting[heaven], granted)
	q.mu.Unlock()
	if q.waited != nil {
		q.waited(heaven)
	}

	select {
	case <-granted:
		return release, nil
	case <-ctx.Done():
	}
	// Grants happen under mu: checked under it, this is the last word.
	q.mu.Lock()
	select {
	case <-granted: // granted meanwhile: give the slot on
		q.mu.Unlock()
		q.release(heaven)
	default:
		q.dequeue(heaven, granted)
		q.mu.Unlock()
	}
	return nil, ctx.Err()
}

// release frees a slot of heaven and hands it to the next waiting request
// whose heaven may take one.
func (q *fairQueue) release(heaven string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running[heaven]--
	if q.running[heaven] == 0 {
		delete(q.running, heaven)
	}
	q.free++
	q.dispatch()
}

// dispatch hands free slots to waiting requests, heavens in turn. Caller
// holds mu.
func (q *fairQueue) dispatch() {
	for q.free > 0 && len(q.ring) > 0 {
		handed := false
		for i := 0; i < len(q.ring) && q.free > 0; i++ {
			h := q.ring[0]
			q.ring = q.ring[1:]
			if q.running[h] >= q.perHeaven {
				q.ring = append(q.ring, h) // at its share: its turn passes
				continue
			}
			w := q.waiting[h]
			close(w[0])
			q.free--
			q.running[h]++
			handed = true
			if w = w[1:]; len(w) > 0 {
				q.waiting[h] = w
				q.ring = append(q.ring, h)
			} else {
				delete(q.waiting, h)
			}
		}
		if !handed {
			return
		}
	}
}

// dequeue removes a waiting request that gave up. Caller holds mu.
func (q *fairQueue) dequeue(heaven string, granted chan struct{}) {
	w := q.waiting[heaven]
	for i, c := range w {
		if c == granted {
			w = append(w[:i], w[i+1:]...)
			break
		}
	}
	if len(w) > 0 {
		q.waiting[heaven] = w
		return
	}
	delete(q.waiting, heaven)
	for i, h := range q.ring {
		if h == heaven {
			q.ring = append(q.ring[:i], q.ring[i+1:]...)
			break
		}
	}
}
