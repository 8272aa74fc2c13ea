// Package chaos runs heaven-server (the real binary, as a subprocess)
// through what people and machines do to it at once, for CHAOS_DURATION
// (default 2m; make test-chaos runs 20m): writes through client-go and the
// real kubectl; pushes of good and bad files through git (the pre-receive
// hook refuses the bad ones), bad files moved in with git update-ref (which
// no hook sees), force-pushes from stale clones; kill -9 and restart of the
// server; and git gc run by hand on the repository. Afterwards:
//   - git fsck --strict is clean;
//   - every acknowledged write is in the branch's history, and the object
//     holds the last acknowledged value unless a later commit changed it;
//   - revisions never went backwards;
//   - the server is idle within 10 s of the load ending: no retry loop is
//     left running.
//
// CHAOS_SEED sets the random seed (default: the clock, logged).
package chaos

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// heaven is the heaven under test; namespace holds its objects.
	heaven    = "chaos"
	namespace = "default"
	dir       = "core/configmaps/" + namespace + "/"
)

func TestChaos(t *testing.T) {
	duration := 2 * time.Minute
	if d := os.Getenv("CHAOS_DURATION"); d != "" {
		var err error
		if duration, err = time.ParseDuration(d); err != nil {
			t.Fatalf("CHAOS_DURATION: %v", err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("duration=%v seed=%d", duration, seed)

	srv := newServer(t)
	srv.start(t)
	m := newModel()
	c := &counts{}
	kube := srv.kube(t)
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()

	var wg sync.WaitGroup
	load := phases{start: time.Now(), busy: 3 * time.Second, quiet: 2 * time.Second}
	for i := range 3 {
		w := &apiWriter{id: i, kube: kube, m: m, load: load, rnd: rand.New(rand.NewPCG(seed, uint64(i)))}
		wg.Go(func() { w.run(ctx) })
	}
	if kubectl := os.Getenv("KUBECTL"); kubectl != "" {
		kw := &kubectlWriter{kubectl: kubectl, srv: srv, m: m, load: load}
		wg.Go(func() { kw.run(ctx) })
	} else {
		t.Log("KUBECTL not set: no kubectl writer")
	}
	p := &pusher{t: t, srv: srv, c: c, rnd: rand.New(rand.NewPCG(seed, 100)), work: t.TempDir()}
	wg.Go(func() { p.run(ctx) })

	// The server is killed and restarted, and git gc runs, at random
	// moments, on this goroutine.
	rnd := rand.New(rand.NewPCG(seed, 200))
	nextKill, nextGC := time.Now().Add(jitter(rnd, 20*time.Second)), time.Now().Add(jitter(rnd, 15*time.Second))
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(min(time.Until(nextKill), time.Until(nextGC))):
		}
		if ctx.Err() != nil {
			break
		}
		if !time.Now().Before(nextGC) {
			if out, err := srv.git(context.Background(), "gc", "--quiet"); err != nil {
				// gc may meet our ref locks or packs replaced under it:
				// it is retried at the next turn, as an operator would.
				t.Logf("git gc: %v: %s", err, strings.TrimSpace(out))
			} else {
				c.add(&c.gcs)
			}
			nextGC = time.Now().Add(jitter(rnd, 15*time.Second))
		}
		if !time.Now().Before(nextKill) {
			srv.kill(t)
			srv.start(t)
			c.add(&c.kills)
			nextKill = time.Now().Add(jitter(rnd, 20*time.Second))
		}
	}
	wg.Wait()

	// No retry loop may keep running once the load is gone.
	time.Sleep(10 * time.Second) // the quiet period the check measures, not a synchronisation
	before := srv.cpuSeconds(t)
	time.Sleep(5 * time.Second)
	cpu := (srv.cpuSeconds(t) - before) / 5
	if cpu > 0.10 {
		t.Errorf("the server still uses %.0f%% of a CPU 10 s after the load ended; %s", cpu*100, srv.logHint())
	}

	verify(t, srv, m)
	srv.stop(t)
	out, err := srv.git(context.Background(), "fsck", "--strict", "--no-progress")
	if err != nil || strings.Contains(out, "error") || strings.Contains(out, "warning") {
		t.Errorf("git fsck --strict: %v\n%s", err, out)
	}
	t.Logf("writes acknowledged: %d through the API (%d through kubectl), %d failed %v; pushes: %d accepted, %d refused by the hook, %d behind and retried; "+
		"bad files moved in with update-ref: %d; force-pushes: %d; kills: %d; git gc runs: %d; server CPU when idle: %.1f%%",
		m.acked(), m.kubectlAcks, m.cutOff, m.reasons, c.pushes, c.refused, c.behind, c.updateRefs, c.forcePushes, c.kills, c.gcs, cpu*100)
}

// phases alternate busy and quiet periods of the writers: at full speed
// while busy; quiet periods let people's pushes through, which a branch
// that moves every few milliseconds never does (git refuses a push that is
// behind).
type phases struct {
	start       time.Time
	busy, quiet time.Duration
}

// wait returns at once in a busy period, else when the next one begins;
// false once ctx ends.
func (p phases) wait(ctx context.Context) bool {
	into := time.Since(p.start) % (p.busy + p.quiet)
	if into >= p.busy {
		select {
		case <-ctx.Done():
		case <-time.After(p.busy + p.quiet - into):
		}
	}
	return ctx.Err() == nil
}

func jitter(rnd *rand.Rand, mean time.Duration) time.Duration {
	return mean/2 + time.Duration(rnd.Int64N(int64(mean)))
}

// counts of what the chaos did.
type counts struct {
	mu                                                           sync.Mutex
	pushes, refused, behind, updateRefs, forcePushes, kills, gcs int
}

func (c *counts) add(n *int) {
	c.mu.Lock()
	*n++
	c.mu.Unlock()
}

// ---- what was acknowledged ----

// write is one acknowledged write of a key: its value ("" for a delete)
// and the revision it was acknowledged at.
type write struct {
	value string
	rev   int64
}

type model struct {
	mu     sync.Mutex
	writes map[string][]write // by object name, in order
	// maxRev is the highest revision acknowledged so far; a write that
	// starts later must get a higher one.
	maxRev              int64
	backwards           []string
	cutOff, kubectlAcks int
	reasons             map[string]int // of the writes cut off
}

func newModel() *model { return &model{writes: map[string][]write{}, reasons: map[string]int{}} }

// begin returns the revision every write starting now must exceed.
func (m *model) begin() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxRev
}

// ack records an acknowledged write that began when floor was the highest
// revision acknowledged.
func (m *model) ack(name, value string, rev, floor int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if rev > 0 && rev <= floor { // deletes answer with the object as it was: no revision of theirs
		m.backwards = append(m.backwards, fmt.Sprintf("%s at revision %d, after %d was acknowledged", name, rev, floor))
	}
	m.maxRev = max(m.maxRev, rev)
	m.writes[name] = append(m.writes[name], write{value, rev})
}

// doubt records a write that failed: cut off by a kill, refused while the
// server restarts, or of an object a force-push removed. Whether it landed
// is not known; it is counted by the reason it failed.
func (m *model) doubt(err error) {
	reason := string(apierrors.ReasonForError(err))
	if reason == "" {
		reason = "no answer"
	}
	m.mu.Lock()
	m.cutOff++
	m.reasons[reason]++
	m.mu.Unlock()
}

func (m *model) acked() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ws := range m.writes {
		n += len(ws)
	}
	return n
}

// ---- the writers ----

// apiWriter creates, updates and deletes its own config maps through
// client-go, one at a time.
type apiWriter struct {
	id   int
	kube kubernetes.Interface
	m    *model
	load phases
	rnd  *rand.Rand
	live []string // its objects that exist, as far as it knows
	seq  int
}

func (w *apiWriter) run(ctx context.Context) {
	cms := w.kube.CoreV1().ConfigMaps(namespace)
	for w.load.wait(ctx) {
		w.seq++
		value := fmt.Sprintf("w%d-%d", w.id, w.seq)
		floor := w.m.begin()
		var name string
		var rev int64
		var err error
		switch op := w.rnd.IntN(10); {
		case op < 4 || len(w.live) == 0: // create
			name = fmt.Sprintf("api-%d-%d", w.id, w.seq)
			var cm *corev1.ConfigMap
			cm, err = cms.Create(ctx, configMap(name, value), metav1.CreateOptions{})
			if err == nil {
				rev, w.live = resourceVersion(cm), append(w.live, name)
			}
		case op < 8: // update
			name = w.live[w.rnd.IntN(len(w.live))]
			var cm *corev1.ConfigMap
			cm, err = cms.Update(ctx, configMap(name, value), metav1.UpdateOptions{})
			if err == nil {
				rev = resourceVersion(cm)
			}
		default: // delete
			i := w.rnd.IntN(len(w.live))
			name, value = w.live[i], ""
			w.live = append(w.live[:i], w.live[i+1:]...)
			// A delete answers with the object as it was: its revision is
			// not the delete's, so none is checked.
			err = cms.Delete(ctx, name, metav1.DeleteOptions{})
		}
		switch {
		case err == nil:
			w.m.ack(name, value, rev, floor)
		case ctx.Err() == nil:
			// Cut off (a kill), refused while the branch is busy, or
			// gone by a force-push: the write may or may not have
			// landed, and the writer forgets what it knew of the object.
			w.m.doubt(err)
			w.live = slicesDelete(w.live, name)
			time.Sleep(100 * time.Millisecond) // pace retries against a server that is restarting
		}
	}
}

func configMap(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Data: map[string]string{"v": value}}
}

func resourceVersion(cm *corev1.ConfigMap) int64 {
	rev, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	return rev
}

func slicesDelete(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}

// kubectlWriter applies config maps with the real kubectl.
type kubectlWriter struct {
	kubectl string
	srv     *server
	m       *model
	load    phases
}

func (k *kubectlWriter) run(ctx context.Context) {
	for seq := 0; k.load.wait(ctx); seq++ {
		name, value := fmt.Sprintf("kubectl-%d", seq%20), fmt.Sprintf("kubectl-%d", seq)
		floor := k.m.begin()
		cmd := exec.CommandContext(ctx, k.kubectl, "--kubeconfig", k.srv.kubeconfig(), "--server", k.srv.heavenURL(),
			"--request-timeout", "10s", "apply", "-f", "-", "-o", "jsonpath={.metadata.resourceVersion}")
		cmd.Stdin = strings.NewReader(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {v: %s}\n", name, namespace, value))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			if ctx.Err() == nil {
				k.m.doubt(err)
				time.Sleep(100 * time.Millisecond) // pace retries against a server that is restarting
			}
			continue
		}
		rev, _ := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		k.m.ack(name, value, rev, floor)
		k.m.mu.Lock()
		k.m.kubectlAcks++
		k.m.mu.Unlock()
	}
}

// ---- people pushing ----

// pusher is a person with a clone of the heaven's branch: good files
// pushed (pulling first when behind), bad files refused by the hook, bad
// files moved in with git update-ref, and force-pushes of stale commits.
type pusher struct {
	t     *testing.T
	srv   *server
	c     *counts
	rnd   *rand.Rand
	work  string
	clone string
	seq   int
	seen  []seenHead // heads fetched, oldest first: stale commits to force-push
}

type seenHead struct {
	commit string
	at     time.Time
}

// badFiles are mistakes people make, each with the hook's words for it.
var badFiles = []struct{ dir, ext, content, refusal string }{
	{dir, ".json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"`, "not valid JSON"},
	{dir, ".yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: default\n", "not valid YAML"},
	{"core/secrets/default/", ".json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"default"}}`, "does not belong in core/secrets/"},
	{dir, ".json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s-other","namespace":"default"}}`, "is not"},
	{dir, ".json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"default"},"data":7}`, "not a valid ConfigMap"},
}

func (p *pusher) run(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-time.After(jitter(p.rnd, 2*time.Second)):
		}
		if err := p.refresh(ctx); err != nil {
			if ctx.Err() == nil {
				p.t.Logf("refreshing the clone: %v", err)
			}
			continue
		}
		p.seq++
		var err error
		switch op := p.rnd.IntN(10); {
		case op < 4:
			err = p.pushGood(ctx)
		case op < 6:
			err = p.pushBad(ctx)
		case op < 8:
			err = p.updateRefBad(ctx)
		default:
			err = p.forcePushStale(ctx)
		}
		if err != nil && ctx.Err() == nil {
			p.t.Error(err)
		}
	}
}

func (p *pusher) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Env = p.clone, gitEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// refresh makes the clone the branch as it is now.
func (p *pusher) refresh(ctx context.Context) error {
	if p.clone == "" {
		p.clone = p.work + "/w"
		cmd := exec.CommandContext(ctx, "git", "clone", "-q", "--branch", heaven, p.srv.fileURL(), p.clone)
		cmd.Env = gitEnv()
		if out, err := cmd.CombinedOutput(); err != nil {
			p.clone = ""
			return fmt.Errorf("git clone: %v: %s", err, out)
		}
	} else if out, err := p.git(ctx, "fetch", "-q", "origin"); err != nil {
		return fmt.Errorf("git fetch: %v: %s", err, out)
	}
	if out, err := p.git(ctx, "reset", "-q", "--hard", "origin/"+heaven); err != nil {
		return fmt.Errorf("git reset: %v: %s", err, out)
	}
	head, err := p.git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	p.seen = append(p.seen, seenHead{strings.TrimSpace(head), time.Now()})
	return nil
}

func (p *pusher) commit(ctx context.Context, path, content string) error {
	full := p.clone + "/" + path
	if err := os.MkdirAll(full[:strings.LastIndexByte(full, '/')], 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		return err
	}
	if out, err := p.git(ctx, "add", "-A"); err != nil {
		return fmt.Errorf("git add: %v: %s", err, out)
	}
	if out, err := p.git(ctx, "commit", "-qm", "chaos: "+path); err != nil {
		return fmt.Errorf("git commit: %v: %s", err, out)
	}
	return nil
}

// pushGood pushes a good object as YAML, pulling first whenever the
// branch moved on.
func (p *pusher) pushGood(ctx context.Context) error {
	name := fmt.Sprintf("pushed-%d", p.seq)
	if err := p.commit(ctx, dir+name+".yaml", fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  v: pushed-%d\n", name, namespace, p.seq)); err != nil {
		return err
	}
	for range 20 {
		out, err := p.git(ctx, "push", "-q", "origin", "HEAD:refs/heads/"+heaven)
		switch {
		case err == nil:
			p.c.add(&p.c.pushes)
			return nil
		case strings.Contains(out, "heaven:"):
			return fmt.Errorf("the hook refused a good file: %s", out)
		}
		p.c.add(&p.c.behind)
		if out, err := p.git(ctx, "pull", "-q", "--no-rebase", "--no-edit", "origin", heaven); err != nil {
			return fmt.Errorf("git pull: %v: %s", err, out)
		}
	}
	return nil // the branch was too busy this time; a person would try later
}

// pushBad pushes a bad file; the hook must refuse it and name it.
func (p *pusher) pushBad(ctx context.Context) error {
	bad := badFiles[p.rnd.IntN(len(badFiles))]
	path := bad.dir + fmt.Sprintf("bad-%d", p.seq) + bad.ext
	if err := p.commit(ctx, path, fmt.Sprintf(bad.content, fmt.Sprintf("bad-%d", p.seq))); err != nil {
		return err
	}
	// Forced, so that the branch moving on meanwhile does not refuse it
	// before the hook sees it.
	out, err := p.git(ctx, "push", "--force", "origin", "HEAD:refs/heads/"+heaven)
	if err == nil {
		return fmt.Errorf("a push of bad file %s was accepted", path)
	}
	if !strings.Contains(out, "heaven: "+heaven+": "+path+": ") || !strings.Contains(out, bad.refusal) {
		return fmt.Errorf("the refusal of %s does not name it with %q: %s", path, bad.refusal, out)
	}
	p.c.add(&p.c.refused)
	return nil
}

// updateRefBad moves the branch to a commit with a bad file the way hooks
// don't see: git update-ref, when the branch is still where it was fetched.
func (p *pusher) updateRefBad(ctx context.Context) error {
	old := p.seen[len(p.seen)-1].commit
	bad := badFiles[p.rnd.IntN(len(badFiles))]
	path := bad.dir + fmt.Sprintf("bad-%d", p.seq) + bad.ext
	if err := p.commit(ctx, path, fmt.Sprintf(bad.content, fmt.Sprintf("bad-%d", p.seq))); err != nil {
		return err
	}
	if out, err := p.git(ctx, "push", "-q", "origin", fmt.Sprintf("HEAD:refs/scratch/%d", p.seq)); err != nil {
		return fmt.Errorf("git push to a scratch ref: %v: %s", err, out)
	}
	head, _ := p.git(ctx, "rev-parse", "HEAD")
	if _, err := p.srv.git(ctx, "update-ref", "refs/heads/"+heaven, strings.TrimSpace(head), old); err == nil {
		p.c.add(&p.c.updateRefs)
	}
	return nil
}

// forcePushStale force-pushes a head seen at least 20 s ago, undoing what
// came since, as someone with an old clone does.
func (p *pusher) forcePushStale(ctx context.Context) error {
	var stale string
	for _, s := range p.seen {
		if time.Since(s.at) > 20*time.Second {
			stale = s.commit
		}
	}
	if stale == "" {
		return nil
	}
	out, err := p.git(ctx, "push", "--force", "origin", stale+":refs/heads/"+heaven)
	switch {
	case err == nil:
		p.c.add(&p.c.forcePushes)
	case strings.Contains(out, "heaven:"):
		p.c.add(&p.c.refused) // the stale tree holds a bad file moved in since
	}
	return nil
}
