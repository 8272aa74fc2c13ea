package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/heavenapi"
)

// errCreateForbidden is returned to a user who names a heaven that does not
// exist and may not create it on first use.
var errCreateForbidden = errors.New("only administrators create heavens on first use")

// errUnknownHeaven is returned for a heaven that is neither running nor
// allowed to start (see heavens.allowed).
var errUnknownHeaven = errors.New("heaven not found")

// errNotRunning answers a heaven's own controllers once it has stopped.
var errNotRunning = errors.New("heaven is not running")

// apiServer is what the registry needs of a heaven's API server: a
// *heavenapi.Server, or a fake in the registry's tests.
type apiServer interface {
	Handler() http.Handler
	// OwnWatchHandler serves the watches of the heaven's own clients.
	OwnWatchHandler() http.Handler
	Ready() <-chan struct{}
	// Failed is closed when the server gives up starting; Err says why.
	Failed() <-chan struct{}
	Err() error
	Done() <-chan struct{}
	Start()
	Stop(ctx context.Context) error
	// AuthenticateToken authenticates the heaven's ServiceAccount tokens.
	AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error)
	// Authorize answers as the heaven's authorizer.
	Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

// heavens starts heavens on their first request and stops them when idle,
// so that the number of heavens is bounded by disk, not memory.
//
// Lock order: heavens.mu, then nothing (starting and stopping happen
// outside it; a heaven's entry carries its own state).
type heavens struct {
	// newServer builds a heaven's API server (heavenapi.New in production).
	newServer func(name string) (apiServer, error)
	// allowed says whether a heaven that is not running may start.
	allowed func(ctx context.Context, name string) (bool, error)
	// onStop runs after a heaven stopped (closes its git branch).
	onStop func(name string)
	// pinned heavens are never stopped for being idle (root: its Heaven
	// controller watches it from inside the process).
	pinned      map[string]bool
	idleTimeout time.Duration
	metrics     *metrics

	mu      sync.Mutex
	running map[string]*heaven
	closed  bool
}

// heaven is one heaven's place in the registry.
type heaven struct {
	name    string
	started chan struct{} // closed when server or err is set
	server  apiServer
	err     error

	// Guarded by heavens.mu:
	inflight int       // external requests and watches being served
	lastUsed time.Time // when inflight last dropped to zero
	stopping bool
}

func newHeavens(newServer func(string) (*heavenapi.Server, error), idle time.Duration, m *metrics) *heavens {
	return &heavens{
		newServer: func(name string) (apiServer, error) {
			srv, err := newServer(name)
			if err != nil {
				return nil, err // not an apiServer holding a nil pointer
			}
			return srv, nil
		},
		allowed:     func(context.Context, string) (bool, error) { return true, nil },
		onStop:      func(string) {},
		pinned:      map[string]bool{},
		idleTimeout: idle,
		metrics:     m,
		running:     map[string]*heaven{},
	}
}

// acquire returns the running server of heaven name, starting it if needed,
// and counts a request against it until release is called. waitReady makes
// it wait until the heaven serves every request; the heaven's own
// controllers call it without waiting (they are what makes it ready).
func (hs *heavens) acquire(ctx context.Context, name string, count, waitReady bool) (apiServer, func(), error) {
	h, err := hs.entry(ctx, name, count)
	if err != nil {
		return nil, nil, err
	}
	release := func() {}
	if count {
		release = sync.OnceFunc(func() { hs.release(h) })
	}
	select {
	case <-h.started:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if h.err != nil {
		release()
		return nil, nil, h.err
	}
	if waitReady {
		select {
		case <-h.server.Ready():
		case <-h.server.Failed():
			release()
			return nil, nil, fmt.Errorf("heaven %s could not start: %w", name, h.server.Err())
		case <-h.server.Done():
			release()
			return nil, nil, fmt.Errorf("heaven %s stopped while starting", name)
		case <-ctx.Done():
			release()
			return nil, nil, ctx.Err()
		}
	}
	return h.server, release, nil
}

// acquireRunning is acquire for a heaven that is already running: it never
// starts one, and refuses one that is stopping.
func (hs *heavens) acquireRunning(ctx context.Context, name string, count, waitReady bool) (apiServer, func(), error) {
	if !hs.isRunning(name) {
		return nil, nil, errNotRunning
	}
	return hs.acquire(ctx, name, count, waitReady)
}

// isRunning says whether heaven name runs (or starts).
func (hs *heavens) isRunning(name string) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h, ok := hs.running[name]
	return ok && !h.stopping
}

// entry finds or creates the registry entry of a heaven.
func (hs *heavens) entry(ctx context.Context, name string, count bool) (*heaven, error) {
	for {
		hs.mu.Lock()
		if hs.closed {
			hs.mu.Unlock()
			return nil, errors.New("heaven-server is shutting down")
		}
		h, ok := hs.running[name]
		if ok && h.stopping {
			// Wait for the old instance to go before starting a new one.
			hs.mu.Unlock()
			select {
			case <-h.server.Done():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		if ok {
			if count {
				h.inflight++
			}
			hs.mu.Unlock()
			return h, nil
		}
		hs.mu.Unlock()

		allowed, err := hs.allowed(ctx, name)
		if err != nil {
			return nil, err // errCreateForbidden among others
		}
		if !allowed {
			return nil, errUnknownHeaven
		}

		hs.mu.Lock()
		if _, raced := hs.running[name]; raced || hs.closed {
			hs.mu.Unlock()
			continue
		}
		h = &heaven{name: name, started: make(chan struct{}), lastUsed: time.Now()}
		if count {
			h.inflight++
		}
		hs.running[name] = h
		hs.mu.Unlock()
		go hs.start(h)
		return h, nil
	}
}

func (hs *heavens) start(h *heaven) {
	began := time.Now()
	srv, err := hs.newServer(h.name)
	if err == nil {
		srv.Start()
	}
	h.server, h.err = srv, err
	close(h.started)
	if err != nil {
		klog.ErrorS(err, "Starting heaven failed", "heaven", h.name)
		hs.mu.Lock()
		if hs.running[h.name] == h {
			delete(hs.running, h.name)
		}
		hs.mu.Unlock()
		return
	}
	hs.metrics.activeHeavens.Inc()
	hs.metrics.heavenStarts.Inc()
	go func() {
		select {
		case <-srv.Ready():
			hs.metrics.startLatency.Observe(time.Since(began).Seconds())
			klog.V(2).InfoS("Heaven ready", "heaven", h.name, "duration", time.Since(began))
		case <-srv.Failed():
			// It gave up starting: the next request starts it afresh,
			// while this one stops.
			hs.mu.Lock()
			gone := hs.running[h.name] == h && !h.stopping
			if gone {
				delete(hs.running, h.name)
			}
			hs.mu.Unlock()
			if gone {
				hs.metrics.activeHeavens.Dec()
				<-srv.Done()
				hs.released(h.name)
			}
		case <-srv.Done():
		}
	}()
}

func (hs *heavens) release(h *heaven) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h.inflight--
	if h.inflight == 0 {
		h.lastUsed = time.Now()
	}
}

// evictIdle stops every heaven that has served nothing for idleTimeout.
func (hs *heavens) evictIdle(ctx context.Context, now time.Time) {
	var idle []*heaven
	hs.mu.Lock()
	for _, h := range hs.running {
		if h.stopping || h.inflight > 0 || hs.pinned[h.name] || now.Sub(h.lastUsed) < hs.idleTimeout {
			continue
		}
		select {
		case <-h.started:
		default:
			continue
		}
		h.stopping = true
		idle = append(idle, h)
	}
	hs.mu.Unlock()
	for _, h := range idle {
		klog.V(2).InfoS("Stopping idle heaven", "heaven", h.name, "idle", now.Sub(h.lastUsed))
		hs.stop(ctx, h)
	}
}

// stopHeaven stops one heaven now, e.g. because its Heaven object is gone.
func (hs *heavens) stopHeaven(ctx context.Context, name string) {
	hs.mu.Lock()
	h, ok := hs.running[name]
	if ok && !h.stopping {
		h.stopping = true
	} else {
		ok = false
	}
	hs.mu.Unlock()
	if ok {
		<-h.started
		if h.err == nil {
			hs.stop(ctx, h)
		}
	}
}

func (hs *heavens) stop(ctx context.Context, h *heaven) {
	if err := h.server.Stop(ctx); err != nil {
		klog.ErrorS(err, "Stopping heaven", "heaven", h.name)
	}
	hs.mu.Lock()
	if hs.running[h.name] == h {
		delete(hs.running, h.name)
	}
	hs.mu.Unlock()
	hs.released(h.name)
	hs.metrics.activeHeavens.Dec()
}

// released runs onStop for the branch of a heaven (or view) whose server
// stopped, unless another server uses that branch: one of the heaven that
// started meanwhile, the heaven itself after a view, or a view of it.
// The check and onStop happen under mu, so no server starts in between.
func (hs *heavens) released(name string) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	branch := branchOf(name)
	for running := range hs.running {
		if branchOf(running) == branch {
			return
		}
	}
	hs.onStop(branch)
}

// runEvictor checks for idle heavens until ctx ends.
func (hs *heavens) runEvictor(ctx context.Context) {
	period := hs.idleTimeout / 4
	if period < 100*time.Millisecond {
		period = 100 * time.Millisecond
	}
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			hs.evictIdle(ctx, now)
		}
	}
}

// stopAll stops every heaven; no heaven starts afterwards.
func (hs *heavens) stopAll(ctx context.Context) {
	hs.mu.Lock()
	hs.closed = true
	var all []*heaven
	for _, h := range hs.running {
		if !h.stopping {
			h.stopping = true
			all = append(all, h)
		}
	}
	hs.mu.Unlock()
	var wg sync.WaitGroup
	for _, h := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-h.started
			if h.err == nil {
				hs.stop(ctx, h)
			}
		}()
	}
	wg.Wait()
}

// active returns the names of running heavens.
func (hs *heavens) active() []string {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	names := make([]string, 0, len(hs.running))
	for n := range hs.running {
		names = append(names, n)
	}
	return names
}
