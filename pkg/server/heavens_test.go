package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// fakeServer stands in for a heaven's API server (a whole
// k8s.io/apiserver chain, too much for these tests): it becomes ready on
// Start unless told to wait, and its handler says which heaven, path and
// user it served.
type fakeServer struct {
	name                string
	ready, done, failed chan struct{}
	readyOnce           sync.Once
	doneOnce            sync.Once
	failErr             error

	mu       sync.Mutex
	started  bool
	stops    int
	stopGate chan struct{} // Stop waits for it to close, if not nil
}

func (f *fakeServer) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := request.UserFrom(r.Context())
		name := ""
		if u != nil {
			name = u.GetName()
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "heaven=%s path=%s user=%s", f.name, r.URL.Path, name)
	})
}

// OwnWatchHandler answers as Handler, marked "own-watch".
func (f *fakeServer) OwnWatchHandler() http.Handler {
	h := f.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "own-watch ")
		h.ServeHTTP(w, r)
	})
}

func (f *fakeServer) Ready() <-chan struct{} { return f.ready }
func (f *fakeServer) Done() <-chan struct{}  { return f.done }

func (f *fakeServer) Failed() <-chan struct{} { return f.failed }

// Err is why the server gave up starting (fail), else nil.
func (f *fakeServer) Err() error { return f.failErr }

// fail gives up starting, and stops, as the real server does.
func (f *fakeServer) fail(err error) {
	f.failErr = err
	close(f.failed)
	f.stop()
}

func (f *fakeServer) Start() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = true
}

func (f *fakeServer) Stop(ctx context.Context) error {
	f.mu.Lock()
	f.stops++
	gate := f.stopGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.stop()
	return nil
}

// becomeReady and stop are what the real server does by itself.
func (f *fakeServer) AuthenticateToken(context.Context, string) (*authenticator.Response, bool, error) {
	return nil, false, nil
}

func (f *fakeServer) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.DecisionNoOpinion, "", nil
}

func (f *fakeServer) becomeReady() { f.readyOnce.Do(func() { close(f.ready) }) }
func (f *fakeServer) stop()        { f.doneOnce.Do(func() { close(f.done) }) }

func (f *fakeServer) isStarted() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.started
}

func (f *fakeServer) stopCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stops
}

// fakeServers builds fakeServers for a heavens registry and remembers
// them.
type fakeServers struct {
	mu    sync.Mutex
	built map[string][]*fakeServer
	// fail makes the build of a heaven fail.
	fail map[string]error
	// notReady heavens' servers wait for becomeReady.
	notReady map[string]bool
	// gate, if not nil, holds every build until it closes.
	gate chan struct{}
}

func newFakeServers() *fakeServers {
	return &fakeServers{built: map[string][]*fakeServer{}, fail: map[string]error{}, notReady: map[string]bool{}}
}

func (fs *fakeServers) newServer(name string) (apiServer, error) {
	fs.mu.Lock()
	gate := fs.gate
	fs.mu.Unlock()
	if gate != nil {
		<-gate
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.fail[name]; err != nil {
		return nil, err
	}
	f := &fakeServer{name: name, ready: make(chan struct{}), done: make(chan struct{}), failed: make(chan struct{})}
	if !fs.notReady[name] {
		f.becomeReady()
	}
	fs.built[name] = append(fs.built[name], f)
	return f, nil
}

// servers are the servers built for heaven name, oldest first.
func (fs *fakeServers) servers(name string) []*fakeServer {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return append([]*fakeServer(nil), fs.built[name]...)
}

// newTestHeavens is a registry of fake servers with idle timeout idle.
func newTestHeavens(idle time.Duration) (*heavens, *fakeServers) {
	fs := newFakeServers()
	hs := newHeavens(nil, idle, serverMetrics())
	hs.newServer = fs.newServer
	return hs, fs
}

// inflight is the count of external requests of a running heaven.
func (hs *heavens) inflightOf(name string) int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h, ok := hs.running[name]; ok {
		return h.inflight
	}
	return -1
}

func TestHeavensAcquire(t *testing.T) {
	errBuild := errors.New("no storage for you")
	errLookup := errors.New("root is unreachable")
	registered, unregistered := ptrTo(true), ptrTo(false)
	for _, tc := range []struct {
		name string
		// setUp prepares the registry before the acquire of heaven "a".
		setUp     func(hs *heavens, fs *fakeServers)
		waitReady bool
		// during runs while the acquire waits (nil: it does not wait).
		during  func(t *testing.T, fs *fakeServers, cancel context.CancelFunc)
		wantErr error  // errors.Is
		errText string // and/or the error says this
		built   int    // servers built for "a"
		// registered: "a" is in the registry afterwards (nil: not
		// checked).
		registered *bool
	}{{
		name: "a heaven starts on its first request", waitReady: true,
		built: 1, registered: registered,
	}, {
		name:  "a heaven that is running is reused",
		setUp: func(hs *heavens, _ *fakeServers) { mustAcquire(hs, "a") },
		built: 1, registered: registered,
	}, {
		name:    "a heaven that is not allowed is unknown",
		setUp:   func(hs *heavens, _ *fakeServers) { hs.allowed = allowOnly("b") },
		wantErr: errUnknownHeaven, registered: unregistered,
	}, {
		name: "a failed lookup of whether it may start is the error",
		setUp: func(hs *heavens, _ *fakeServers) {
			hs.allowed = func(context.Context, string) (bool, error) { return false, errLookup }
		},
		wantErr: errLookup, registered: unregistered,
	}, {
		name:    "a server that cannot be built is the error, and nothing stays registered",
		setUp:   func(_ *heavens, fs *fakeServers) { fs.fail["a"] = errBuild },
		wantErr: errBuild, registered: unregistered,
	}, {
		name: "without waiting, a heaven that is not ready yet is returned", waitReady: false,
		setUp: func(_ *heavens, fs *fakeServers) { fs.notReady["a"] = true },
		built: 1, registered: registered,
	}, {
		name: "a heaven is returned once it is ready", waitReady: true,
		setUp: func(_ *heavens, fs *fakeServers) { fs.notReady["a"] = true },
		during: func(t *testing.T, fs *fakeServers, _ context.CancelFunc) {
			waitBuilt(t, fs, "a", 1)[0].becomeReady()
		},
		built: 1, registered: registered,
	}, {
		// Whether it stays registered is the registry's business.
		name: "a heaven that stops before it is ready is an error", waitReady: true,
		setUp: func(_ *heavens, fs *fakeServers) { fs.notReady["a"] = true },
		during: func(t *testing.T, fs *fakeServers, _ context.CancelFunc) {
			waitBuilt(t, fs, "a", 1)[0].stop()
		},
		errText: "heaven a stopped while starting",
		built:   1,
	}, {
		name: "a caller that gives up while the heaven starts gets its context's error", waitReady: true,
		setUp: func(_ *heavens, fs *fakeServers) { fs.notReady["a"] = true },
		during: func(t *testing.T, fs *fakeServers, cancel context.CancelFunc) {
			waitBuilt(t, fs, "a", 1)
			cancel()
		},
		wantErr: context.Canceled,
		built:   1, registered: registered,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			hs, fs := newTestHeavens(time.Minute)
			if tc.setUp != nil {
				tc.setUp(hs, fs)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type result struct {
				srv     apiServer
				release func()
				err     error
			}
			done := make(chan result, 1)
			go func() {
				srv, release, err := hs.acquire(ctx, "a", true, tc.waitReady)
				done <- result{srv, release, err}
			}()
			if tc.during != nil {
				tc.during(t, fs, cancel)
			}
			var r result
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("acquire did not return")
			}

			if tc.wantErr != nil || tc.errText != "" {
				require.Error(t, r.err)
				if tc.wantErr != nil {
					assert.ErrorIs(t, r.err, tc.wantErr)
				}
				if tc.errText != "" {
					assert.ErrorContains(t, r.err, tc.errText)
				}
				assert.Nil(t, r.srv)
			} else {
				require.NoError(t, r.err)
				built := fs.servers("a")
				require.NotEmpty(t, built)
				assert.Same(t, built[0], r.srv, "the server built for the heaven")
				assert.True(t, built[0].isStarted(), "Start was called")
				assert.Equal(t, 1, hs.inflightOf("a"), "the request counts against the heaven")
				r.release()
				r.release() // a second release is a no-op
				assert.Equal(t, 0, hs.inflightOf("a"), "nothing counts once released")
			}
			assert.Len(t, fs.servers("a"), tc.built, "servers built")
			if tc.registered != nil {
				// A failed start leaves the registry just after it is
				// reported.
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					assert.Equal(c, *tc.registered, slices.Contains(hs.active(), "a"), "registered")
				}, 10*time.Second, time.Millisecond)
			}
			if slices.Contains(hs.active(), "a") {
				assert.Equal(t, 0, hs.inflightOf("a"), "a request that failed does not count")
			}
		})
	}
}

// TestHeavensAcquireAfterAFailedStartTriesAgain: a failed build is not
// remembered; the next request builds again.
func TestHeavensAcquireAfterAFailedStartTriesAgain(t *testing.T) {
	hs, fs := newTestHeavens(time.Minute)
	fs.fail["a"] = errors.New("disk full")
	_, _, err := hs.acquire(t.Context(), "a", true, true)
	require.Error(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, hs.active(), "a")
	}, 10*time.Second, time.Millisecond, "the failed heaven leaves the registry")

	fs.mu.Lock()
	delete(fs.fail, "a")
	fs.mu.Unlock()
	srv, release, err := hs.acquire(t.Context(), "a", true, true)
	require.NoError(t, err)
	defer release()
	assert.Same(t, fs.servers("a")[0], srv)
}

// TestHeavensServerThatGivesUpStarting: a server that gives up starting
// answers its waiting requests with why, leaves the registry at once (the
// next request starts a new one), and its heaven's storage is released
// only if no newer server uses it.
func TestHeavensServerThatGivesUpStarting(t *testing.T) {
	hs, fs := newTestHeavens(time.Minute)
	var released []string
	var mu sync.Mutex
	hs.onStop = func(name string) { mu.Lock(); released = append(released, name); mu.Unlock() }
	fs.notReady["a"] = true
	errs := make(chan error, 1)
	go func() {
		_, _, err := hs.acquire(t.Context(), "a", true, true)
		errs <- err
	}()
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.Len(c, fs.servers("a"), 1) }, 10*time.Second, time.Millisecond)
	first := fs.servers("a")[0]
	first.failErr = errors.New("the branch can't be written")
	close(first.failed) // gave up; still stopping
	err := <-errs
	require.ErrorContains(t, err, "heaven a could not start: the branch can't be written")

	fs.mu.Lock()
	fs.notReady["a"] = false
	fs.mu.Unlock()
	require.EventuallyWithT(t, func(c *assert.CollectT) { assert.NotContains(c, hs.active(), "a") }, 10*time.Second, time.Millisecond)
	_, release, err := hs.acquire(t.Context(), "a", true, true)
	require.NoError(t, err, "a new server starts although the old one is still stopping")
	defer release()
	first.stop()
	require.Never(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(released) > 0 }, 100*time.Millisecond, time.Millisecond,
		"the old server's end does not release what the new one uses")
}

// TestHeavensConcurrentAcquire: requests that arrive together while a
// heaven starts share one server, and each counts until released.
func TestHeavensConcurrentAcquire(t *testing.T) {
	hs, fs := newTestHeavens(time.Minute)
	fs.gate = make(chan struct{})
	const n = 8
	type result struct {
		srv     apiServer
		release func()
		err     error
	}
	results := make(chan result, n)
	for range n {
		go func() {
			srv, release, err := hs.acquire(t.Context(), "a", true, true)
			results <- result{srv, release, err}
		}()
	}
	// All n are counted (registered) before the one build may finish.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, n, hs.inflightOf("a"))
	}, 10*time.Second, time.Millisecond, "every request waits on one start")
	close(fs.gate)

	var releases []func()
	for range n {
		r := <-results
		require.NoError(t, r.err)
		assert.Same(t, fs.servers("a")[0], r.srv)
		releases = append(releases, r.release)
	}
	assert.Len(t, fs.servers("a"), 1, "one server built")
	for i, release := range releases {
		release()
		assert.Equal(t, n-1-i, hs.inflightOf("a"))
	}
}

func TestHeavensEvictIdle(t *testing.T) {
	const idle = time.Minute
	for _, tc := range []struct {
		name string
		// Heaven "a" was acquired, and released unless inUse.
		pinned   bool
		inUse    bool
		starting bool          // "a" is still being built
		after    time.Duration // when evictIdle looks, after the last use
		evicted  bool
	}{
		{name: "idle longer than the timeout: stopped", after: 2 * idle, evicted: true},
		{name: "idle just over the timeout: stopped", after: idle + time.Second, evicted: true},
		{name: "used recently: kept", after: idle / 2},
		{name: "serving a request: kept", inUse: true, after: 2 * idle},
		{name: "pinned: kept", pinned: true, after: 2 * idle},
		{name: "still starting: kept", starting: true, after: 2 * idle},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hs, fs := newTestHeavens(idle)
			var stopped []string
			var mu sync.Mutex
			hs.onStop = func(name string) {
				mu.Lock()
				defer mu.Unlock()
				stopped = append(stopped, name)
			}
			hs.pinned["a"] = tc.pinned
			if tc.starting {
				fs.gate = make(chan struct{})
				defer close(fs.gate)
				gaveUp, cancel := context.WithCancel(t.Context())
				cancel()
				_, _, err := hs.acquire(gaveUp, "a", false, false)
				require.ErrorIs(t, err, context.Canceled, "a request that does not wait for the start")
			} else {
				_, release, err := hs.acquire(t.Context(), "a", true, true)
				require.NoError(t, err)
				if !tc.inUse {
					release()
				}
			}
			hs.evictIdle(t.Context(), time.Now().Add(tc.after))

			if tc.evicted {
				assert.Equal(t, []string{"a"}, stopped, "onStop")
				assert.Empty(t, hs.active())
				assert.Equal(t, 1, fs.servers("a")[0].stopCount(), "Stop calls")
			} else {
				assert.Empty(t, stopped, "onStop")
				assert.Equal(t, []string{"a"}, hs.active())
				for _, f := range fs.servers("a") {
					assert.Zero(t, f.stopCount(), "Stop calls")
				}
			}
		})
	}
}

// TestHeavensIdleTimeCountsFromTheLastRelease: a heaven that served a
// request for longer than the idle timeout is not idle when it ends.
func TestHeavensIdleTimeCountsFromTheLastRelease(t *testing.T) {
	const idle = time.Minute
	hs, fs := newTestHeavens(idle)
	_, release, err := hs.acquire(t.Context(), "a", true, true)
	require.NoError(t, err)
	hs.mu.Lock()
	hs.running["a"].lastUsed = time.Now().Add(-2 * idle) // started long ago
	hs.mu.Unlock()
	release()
	hs.evictIdle(t.Context(), time.Now().Add(idle/2))
	assert.Equal(t, []string{"a"}, hs.active())
	assert.Zero(t, fs.servers("a")[0].stopCount(), "Stop calls")
}

// TestHeavensRunEvictorStopsIdleHeavens: the evictor loop stops a heaven
// that is idle for the timeout, by itself.
func TestHeavensRunEvictorStopsIdleHeavens(t *testing.T) {
	hs, fs := newTestHeavens(50 * time.Millisecond)
	_, release, err := hs.acquire(t.Context(), "a", true, true)
	require.NoError(t, err)
	release()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); hs.runEvictor(ctx) }()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, hs.active())
	}, 10*time.Second, 10*time.Millisecond, "a stopped")
	assert.Equal(t, 1, fs.servers("a")[0].stopCount())
	cancel()
	<-done
}

// TestHeavensRequestWhileStoppingStartsANewServer: a request for a heaven
// being stopped waits until the old server is gone, then gets a new one.
func TestHeavensRequestWhileStoppingStartsANewServer(t *testing.T) {
	hs, fs := newTestHeavens(time.Minute)
	_, release, err := hs.acquire(t.Context(), "a", true, true)
	require.NoError(t, err)
	release()
	old := fs.servers("a")[0]
	old.mu.Lock()
	gate := make(chan struct{})
	old.stopGate = gate
	old.mu.Unlock()

	stopped := make(chan struct{})
	go func() { defer close(stopped); hs.stopHeaven(t.Context(), "a") }()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, 1, old.stopCount())
	}, 10*time.Second, time.Millisecond, "stopping a")

	_, _, err = hs.acquireRunning(t.Context(), "a", true, true)
	assert.ErrorIs(t, err, errNotRunning, "a heaven's own controllers do not reach a stopping heaven")

	acquired := make(chan apiServer, 1)
	go func() {
		srv, release, err := hs.acquire(t.Context(), "a", true, true)
		assert.NoError(t, err)
		if err == nil {
			release()
		}
		acquired <- srv
	}()
	select {
	case <-acquired:
		t.Fatal("a request got the heaven while its old server was stopping")
	default:
	}
	close(gate)
	<-stopped
	srv := <-acquired
	require.Len(t, fs.servers("a"), 2, "a new server after the old one stopped")
	assert.Same(t, fs.servers("a")[1], srv)
	assert.Equal(t, []string{"a"}, hs.active())
}

func TestHeavensAcquireRunning(t *testing.T) {
	hs, fs := newTestHeavens(time.Minute)
	_, _, err := hs.acquireRunning(t.Context(), "a", false, false)
	assert.ErrorIs(t, err, errNotRunning, "a heaven that is not running is not started")
	assert.Empty(t, fs.servers("a"))

	_, release, err := hs.acquire(t.Context(), "a", true, true)
	require.NoError(t, err)
	release()
	srv, _, err := hs.acquireRunning(t.Context(), "a", false, false)
	require.NoError(t, err)
	assert.Same(t, fs.servers("a")[0], srv)
	assert.Equal(t, 0, hs.inflightOf("a"), "uncounted requests do not keep a heaven running")
}

// TestHeavensStopAll: every heaven stops, a failed one is skipped, and no
// heaven starts afterwards.
func TestHeavensStopAll(t *testing.T) {
	hs, fs := newTestHeavens(time.Minute)
	for _, name := range []string{"a", "b"} {
		_, release, err := hs.acquire(t.Context(), name, true, true)
		require.NoError(t, err)
		release()
	}
	// Still in use: stopped all the same.
	_, _, err := hs.acquire(t.Context(), "c", true, true)
	require.NoError(t, err)

	hs.stopAll(t.Context())
	assert.Empty(t, hs.active())
	for _, name := range []string{"a", "b", "c"} {
		assert.Equal(t, 1, fs.servers(name)[0].stopCount(), name)
	}
	_, _, err = hs.acquire(t.Context(), "d", true, true)
	assert.ErrorContains(t, err, "shutting down")
	assert.Empty(t, fs.servers("d"))
}

func mustAcquire(hs *heavens, name string) {
	_, release, err := hs.acquire(context.Background(), name, true, true)
	if err != nil {
		panic(err)
	}
	release()
}

func allowOnly(names ...string) func(context.Context, string) (bool, error) {
	return func(_ context.Context, name string) (bool, error) {
		for _, n := range names {
			if n == name {
				return true, nil
			}
		}
		return false, nil
	}
}

// waitBuilt waits until n servers were built for heaven name.
func waitBuilt(t *testing.T, fs *fakeServers, name string, n int) []*fakeServer {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, fs.servers(name), n)
	}, 10*time.Second, time.Millisecond, "%d servers built for %s", n, name)
	return fs.servers(name)
}

func ptrTo[T any](v T) *T { return &v }
