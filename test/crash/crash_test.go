// Package crash shows that "heaven-server store" acknowledges a write only
// once it is durable: it runs the server as a subprocess, SIGKILLs it at
// random moments under write load, restarts it, and checks that every
// acknowledged write is still there with the revisions it was acknowledged
// at, that revisions never go backwards, and that the repository passes
// git fsck --strict.
//
// CRASH_KILLS sets the number of kills (default 5; make test-crash-long
// uses 60), CRASH_WRITERS the number of concurrent writers (default 8),
// CRASH_SEED the random seed (default: the clock, logged).
package crash

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

const (
	// branch is the heaven the writers use; the server runs in prefix mode
	// (its default), so every key starts with /branch/.
	branch  = "crash"
	prefix  = "/" + branch + "/"
	counter = prefix + "counter"

	// minAcksPerRound: a kill comes only after this many acknowledged
	// writes since the last start, so that it lands under load.
	minAcksPerRound = 24
	// maxKillDelay: after minAcksPerRound, the kill comes at a random
	// moment within this much more writing.
	maxKillDelay = 300 * time.Millisecond

	requestTimeout = 5 * time.Second
	startTimeout   = 60 * time.Second
	roundTimeout   = 60 * time.Second
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithBuilds(m, "heaven-server"))
}

// serverBin returns the heaven-server binary TestMain built (a failed
// build ended the run before any test).
func serverBin() string {
	bin, _ := framework.Build("heaven-server")
	return bin
}

func TestAcknowledgedWritesSurviveKill9(t *testing.T) {
	kills := envInt(t, "CRASH_KILLS", 5)
	writers := envInt(t, "CRASH_WRITERS", 8)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CRASH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("kills=%d writers=%d seed=%d", kills, writers, seed)
	rnd := rand.New(rand.NewPCG(seed, 0))

	srv := newServer(t)
	m := newModel(writers)
	ws := make([]*writer, writers)
	for i := range ws {
		ws[i] = &writer{id: i, m: m, rnd: rand.New(rand.NewPCG(seed, uint64(i)+1))}
	}

	srv.start(t)
	c := srv.client(t)
	initCounter(t, c, m)
	for round := 1; round <= kills; round++ {
		acked := runUntilKilled(t, srv, c, ws, m, rnd)
		srv.fsck(t, fmt.Sprintf("after kill %d", round))
		srv.start(t)
		m.verify(t, c, fmt.Sprintf("after restart %d", round))
		checkHistory(t, c, acked)
		t.Logf("round %d: %d creates acknowledged, revision %d after restart", round, len(acked), m.floor)
		if t.Failed() {
			t.Fatalf("stopping after round %d; server log: %s", round, srv.logPath)
		}
	}
	srv.stop(t)
	srv.fsck(t, "after a clean stop")
	t.Logf("%d kills, %d acknowledged writes all found, %d writes cut off by a kill (%d of them landed), last revision %d",
		kills, m.acks, m.inDoubt, m.landed, m.floor)
}

// runUntilKilled lets the writers write until at least minAcksPerRound
// writes were acknowledged and a random delay more has passed, SIGKILLs
// the server, and stops the writers. It returns the creates acknowledged
// in the round.
func runUntilKilled(t *testing.T, srv *server, c *clientv3.Client, ws []*writer, m *model, rnd *rand.Rand) []created {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	before := m.ackCount()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { w.run(ctx, t, c) })
	}
	deadline := time.Now().Add(roundTimeout)
	for m.ackCount()-before < minAcksPerRound {
		if time.Now().After(deadline) {
			cancel()
			wg.Wait()
			t.Fatalf("only %d writes acknowledged within %v; server log: %s", m.ackCount()-before, roundTimeout, srv.logPath)
		}
		time.Sleep(time.Millisecond)
	}
	// The random moment of the kill; the writers keep writing meanwhile.
	time.Sleep(time.Duration(rnd.Int64N(int64(maxKillDelay))))
	srv.kill(t)
	cancel()
	wg.Wait()
	return m.takeRoundCreates()
}

// ---- the server subprocess ----

type server struct {
	dataDir string
	socket  string
	logPath string
	cmd     *exec.Cmd
	exited  chan error
}

func newServer(t *testing.T) *server {
	// A short directory: unix socket paths are limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "heaven-crash")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("kept %s for inspection", dir)
		}
	})
	return &server{
		dataDir: filepath.Join(dir, "data"),
		socket:  filepath.Join(dir, "etcd.sock"),
		logPath: filepath.Join(dir, "server.log"),
	}
}

func (s *server) endpoint() string { return "unix://" + s.socket }

func (s *server) repoPath() string { return filepath.Join(s.dataDir, "heavens.git") }

// start starts the server and waits until it answers.
func (s *server) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	s.cmd = exec.Command(serverBin(), "store", "--data-dir", s.dataDir, "--listen-client-urls", s.endpoint())
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close() // the child has its own descriptor
	s.exited = make(chan error, 1)
	go func(cmd *exec.Cmd) { s.exited <- cmd.Wait() }(s.cmd)

	c := s.client(t)
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(ctx, counter)
		cancel()
		if err == nil {
			return
		}
		select {
		case werr := <-s.exited:
			t.Fatalf("server exited while starting: %v; log: %s", werr, s.logPath)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not answering after %v: %v; log: %s", startTimeout, err, s.logPath)
		}
	}
}

// kill SIGKILLs the server and waits until it is gone.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if err := <-s.exited; err == nil {
		t.Fatal("the server exited cleanly before it was killed")
	}
}

// stop stops the server with SIGTERM and expects a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	select {
	case err := <-s.exited:
		if err != nil {
			t.Fatalf("server exited with %v after SIGTERM; log: %s", err, s.logPath)
		}
	case <-time.After(startTimeout):
		_ = s.cmd.Process.Kill()
		t.Fatalf("server still running %v after SIGTERM", startTimeout)
	}
}

// client returns a client that outlives restarts (it reconnects).
func (s *server) client(t *testing.T) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{s.endpoint()},
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fsck runs git fsck --strict on the repository with the server stopped,
// and checks that the branch still resolves.
func (s *server) fsck(t *testing.T, when string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command("git", "--git-dir", s.repoPath(), "fsck", "--strict", "--no-progress")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("git fsck --strict %s: %v\n%s", when, err, out.String())
	}
	// With --strict every problem fails the command; what it still prints
	// (dangling objects, notices) is information.
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "error") || strings.HasPrefix(line, "warning") {
			t.Errorf("git fsck --strict %s: %s", when, line)
		}
	}
	rev := exec.Command("git", "--git-dir", s.repoPath(), "rev-parse", "--verify", "--quiet", "refs/heads/"+branch)
	if outb, err := rev.CombinedOutput(); err != nil {
		t.Fatalf("branch %s does not resolve %s: %v %s", branch, when, err, outb)
	}
}

// ---- what was acknowledged ----

// created is an acknowledged create: the key must keep this value, at
// create_revision = mod_revision = rev and version 1.
type created struct {
	key, value string
	rev        int64
}

// doc is a key one writer keeps updating with mod_revision compares.
type doc struct {
	key     string
	known   *keyState // the last acknowledged (or verified) state; nil: not created
	pending *keyState // an update in doubt (no answer), which may or may not have landed
}

type keyState struct {
	value                      string
	createRev, modRev, version int64
}

// model is every acknowledged write and every write in doubt.
type model struct {
	mu      sync.Mutex
	creates map[string]created // acknowledged
	doubt   map[string]string  // creates in doubt: key → value
	docs    []*doc
	// The counter: increments acknowledged, and in doubt.
	counterAcked, counterDoubt int
	// roundCreates are the creates acknowledged since the last kill.
	roundCreates []created
	acks         int
	// inDoubt counts writes that got no answer (cut off by a kill), landed
	// those of them found after the restart.
	inDoubt, landed int
	// floor is the highest revision known to exist; every later write
	// must get a higher one.
	floor int64
}

func newModel(writers int) *model {
	m := &model{creates: map[string]created{}, doubt: map[string]string{}}
	for i := range writers {
		m.docs = append(m.docs, &doc{key: fmt.Sprintf("%sregistry/configmaps/default/doc-%d", prefix, i)})
	}
	return m
}

func (m *model) ackCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acks
}

func (m *model) takeRoundCreates() []created {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.roundCreates
	m.roundCreates = nil
	return r
}

// ack records that a write was acknowledged at rev, which must be above
// every revision known before.
func (m *model) ack(t *testing.T, what string, rev int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev <= m.floor {
		t.Errorf("%s acknowledged at revision %d, not above %d which already existed", what, rev, m.floor)
	}
	m.acks++
}

func initCounter(t *testing.T, c *clientv3.Client, m *model) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(counter), "=", 0)).
		Then(clientv3.OpPut(counter, "0")).Commit()
	if err != nil || !resp.Succeeded {
		t.Fatalf("creating the counter: %v (succeeded %v)", err, resp != nil && resp.Succeeded)
	}
	m.floor = resp.Header.Revision
}

// verify reads everything back after a restart and checks it against the
// model; what was in doubt becomes known, one way or the other.
func (m *model) verify(t *testing.T, c *clientv3.Client, when string) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 4*requestTimeout)
	defer cancel()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("%s: reading back: %v", when, err)
	}
	if resp.Header.Revision < m.floor {
		t.Errorf("%s: revision went backwards: %d, but %d was acknowledged", when, resp.Header.Revision, m.floor)
	}
	stored := map[string]*keyState{}
	for _, kv := range resp.Kvs {
		stored[string(kv.Key)] = &keyState{string(kv.Value), kv.CreateRevision, kv.ModRevision, kv.Version}
	}
	m.verifyCreates(t, when, stored)
	m.verifyDocs(t, when, stored)
	m.verifyCounter(t, when, stored[counter])
	delete(stored, counter)
	for key, st := range stored {
		t.Errorf("%s: key %s (revision %d) was never written", when, key, st.modRev)
	}
	m.floor = max(m.floor, resp.Header.Revision)
}

func (m *model) verifyCreates(t *testing.T, when string, stored map[string]*keyState) {
	for key, want := range m.creates {
		checkCreated(t, when, stored[key], want)
		delete(stored, key)
	}
	for key, value := range m.doubt {
		m.inDoubt++
		if st := stored[key]; st != nil {
			m.landed++
			// It landed; from now on it must stay.
			checkCreated(t, when, st, created{key, value, st.modRev})
			m.creates[key] = created{key, value, st.modRev}
			delete(stored, key)
		}
		delete(m.doubt, key)
	}
}

func checkCreated(t *testing.T, when string, got *keyState, want created) {
	t.Helper()
	switch {
	case got == nil:
		t.Errorf("%s: acknowledged create of %s at revision %d is lost", when, want.key, want.rev)
	case got.value != want.value:
		t.Errorf("%s: %s = %q, acknowledged %q", when, want.key, got.value, want.value)
	case got.createRev != want.rev || got.modRev != want.rev || got.version != 1:
		t.Errorf("%s: %s has create/mod revision %d/%d version %d, acknowledged a create at %d",
			when, want.key, got.createRev, got.modRev, got.version, want.rev)
	}
}

func (m *model) verifyDocs(t *testing.T, when string, stored map[string]*keyState) {
	for _, d := range m.docs {
		got := stored[d.key]
		delete(stored, d.key)
		if d.pending != nil {
			m.inDoubt++
		}
		switch {
		case d.pending != nil && got != nil && m.isLanded(got, d.known, d.pending):
			d.known = got // the update in doubt landed; from now on it must stay
			m.landed++
		case got == nil && d.known != nil:
			t.Errorf("%s: %s is lost; acknowledged %+v", when, d.key, *d.known)
		case got != nil && d.known == nil:
			t.Errorf("%s: %s is %+v but no write of it was acknowledged or in doubt", when, d.key, *got)
		case got != nil && *got != *d.known:
			t.Errorf("%s: %s is %+v; acknowledged %+v (in doubt: %+v)", when, d.key, *got, *d.known, d.pending)
		}
		d.pending = nil
	}
}

// isLanded says whether got is the write in doubt p that followed known.
func (m *model) isLanded(got, known, p *keyState) bool {
	if got.value != p.value || got.version != p.version || got.modRev <= m.floor {
		return false
	}
	if known == nil {
		return got.createRev == got.modRev
	}
	return got.createRev == known.createRev
}

func (m *model) verifyCounter(t *testing.T, when string, got *keyState) {
	if got == nil {
		t.Errorf("%s: the counter is lost", when)
		return
	}
	n, err := strconv.Atoi(got.value)
	if err != nil {
		t.Errorf("%s: the counter holds %q", when, got.value)
		return
	}
	if n < m.counterAcked || n > m.counterAcked+m.counterDoubt {
		t.Errorf("%s: counter = %d; acknowledged %d increments, %d more in doubt", when, n, m.counterAcked, m.counterDoubt)
	}
	if got.version != int64(n)+1 {
		t.Errorf("%s: counter = %d at version %d; every increment is one put after the first", when, n, got.version)
	}
	m.inDoubt += m.counterDoubt
	m.landed += n - m.counterAcked
	m.counterAcked, m.counterDoubt = n, 0
}

// checkHistory reads each create of the last round at its own revision:
// history must survive a crash as well as the current state.
func checkHistory(t *testing.T, c *clientv3.Client, acked []created) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*requestTimeout)
	defer cancel()
	for _, cr := range acked {
		resp, err := c.Get(ctx, cr.key, clientv3.WithRev(cr.rev))
		if err != nil {
			t.Errorf("reading %s at revision %d: %v", cr.key, cr.rev, err)
			continue
		}
		if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != cr.value {
			t.Errorf("%s at revision %d: got %v, acknowledged %q", cr.key, cr.rev, resp.Kvs, cr.value)
		}
	}
}

// ---- the writers ----

// writer does a random mix of creates of new keys, compare-and-swap updates
// of its own document, and increments of the shared counter.
type writer struct {
	id  int
	seq int
	m   *model
	rnd *rand.Rand
}

// run writes until ctx ends or a request fails (the server was killed).
func (w *writer) run(ctx context.Context, t *testing.T, c *clientv3.Client) {
	for ctx.Err() == nil {
		var err error
		switch r := w.rnd.IntN(4); {
		case r < 2:
			err = w.create(ctx, t, c)
		case r == 2:
			err = w.updateDoc(ctx, t, c)
		default:
			err = w.increment(ctx, t, c)
		}
		if err != nil {
			return
		}
	}
}

func (w *writer) create(ctx context.Context, t *testing.T, c *clientv3.Client) error {
	w.seq++
	name := fmt.Sprintf("cm-%d-%d", w.id, w.seq)
	key := prefix + "registry/configmaps/default/" + name
	value := configMap(name, w.seq)
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.Txn(rctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, value)).Commit()
	if err != nil {
		w.m.mu.Lock()
		w.m.doubt[key] = value
		w.m.mu.Unlock()
		return err
	}
	if !resp.Succeeded {
		t.Errorf("create of new key %s failed its compare", key)
		return errors.New("compare failed")
	}
	w.m.ack(t, "create of "+key, resp.Header.Revision)
	cr := created{key, value, resp.Header.Revision}
	w.m.mu.Lock()
	w.m.creates[key] = cr
	w.m.roundCreates = append(w.m.roundCreates, cr)
	w.m.mu.Unlock()
	return nil
}

func (w *writer) updateDoc(ctx context.Context, t *testing.T, c *clientv3.Client) error {
	w.m.mu.Lock()
	d := w.m.docs[w.id]
	known := d.known
	w.m.mu.Unlock()

	w.seq++
	next := &keyState{value: configMap(fmt.Sprintf("doc-%d", w.id), w.seq), version: 1}
	cmp := clientv3.Compare(clientv3.CreateRevision(d.key), "=", 0)
	if known != nil {
		next.createRev, next.version = known.createRev, known.version+1
		cmp = clientv3.Compare(clientv3.ModRevision(d.key), "=", known.modRev)
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	resp, err := c.Txn(rctx).If(cmp).Then(clientv3.OpPut(d.key, next.value)).Commit()
	if err != nil {
		w.m.mu.Lock()
		d.pending = next // revision unknown (0) until verified
		w.m.mu.Unlock()
		return err
	}
	if !resp.Succeeded {
		t.Errorf("update of %s (only this writer writes it) failed its compare against %+v", d.key, known)
		return errors.New("compare failed")
	}
	w.m.ack(t, "update of "+d.key, resp.Header.Revision)
	next.modRev = resp.Header.Revision
	if known == nil {
		next.createRev = next.modRev
	}
	w.m.mu.Lock()
	d.known = next
	w.m.mu.Unlock()
	return nil
}

func (w *writer) increment(ctx context.Context, t *testing.T, c *clientv3.Client) error {
	for {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		cur, err := c.Get(rctx, counter)
		cancel()
		if err != nil {
			return err // nothing written
		}
		n, err := strconv.Atoi(string(cur.Kvs[0].Value))
		if err != nil {
			t.Errorf("counter holds %q", cur.Kvs[0].Value)
			return err
		}
		rctx, cancel = context.WithTimeout(ctx, requestTimeout)
		resp, err := c.Txn(rctx).If(clientv3.Compare(clientv3.ModRevision(counter), "=", cur.Kvs[0].ModRevision)).
			Then(clientv3.OpPut(counter, strconv.Itoa(n+1))).Commit()
		cancel()
		if err != nil {
			w.m.mu.Lock()
			w.m.counterDoubt++
			w.m.mu.Unlock()
			return err
		}
		if resp.Succeeded {
			w.m.ack(t, "counter increment", resp.Header.Revision)
			w.m.mu.Lock()
			w.m.counterAcked++
			w.m.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// configMap is a ConfigMap as a kube-apiserver would store it, about 600
// bytes of JSON.
func configMap(name string, seq int) string {
	return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default",`+
		`"uid":"6f1c1c9e-2b1f-4c55-9d8e-%012d","creationTimestamp":"2026-11-20T00:00:00Z",`+
		`"labels":{"app.kubernetes.io/name":"crash","app.kubernetes.io/part-of":"heaven"},`+
		`"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-11-20T00:00:00Z",`+
		`"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:config.yaml":{},"f:seq":{}}}}]},`+
		`"data":{"seq":"%d","config.yaml":"listen: 0.0.0.0:8080\nlog_level: info\nreplicas: 3\ntimeout: 30s\nretries: 5\n"}}`,
		name, seq, seq)
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return n
}
