// Command bench-store puts the same etcd client load on Heaven's git store
// (gitstore behind its etcd v3 facade) and on an embedded etcd, both in this
// process and both over real gRPC on loopback, and prints how they compare.
//
// Three phases, each run several times, alternating which backend goes
// first:
//
//	write  N writers, each its own connection, doing the single-key txns a
//	       kube-apiserver does: create (mod_revision = 0) the first time a
//	       key is written, then updates with a mod_revision compare.
//	read   N readers: 9 in 10 requests get one key (linearizable), 1 in 10
//	       lists 100 keys from a random key (a kube-apiserver list page).
//	watch  fan-out: the writers first write E changes (not timed); then W
//	       watchers (10 connections) start on the key prefix at the first
//	       of them, with prev_kv as the apiserver asks; events delivered to
//	       all watchers per second, until every watcher has every event.
//
// The last line is
//
//	RESULT write_ratio=<git/etcd> read_ratio=<git/etcd> watch_ratio=<git/etcd>
//
// of the per-phase medians.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
	"github.com/heaven-dev/heaven/test/etcdtest"
)

type config struct {
	duration     time.Duration
	writers      int
	keys         int
	runs         int
	watchers     int
	watchEvents  int
	cpuProfile   string
	drainTimeout time.Duration
	phases       string
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of each phase run")
	flag.IntVar(&cfg.writers, "writers", 16, "concurrent writers (and readers)")
	flag.IntVar(&cfg.keys, "keys", 1000, "distinct keys written and read")
	flag.IntVar(&cfg.runs, "runs", 3, "runs of each phase per backend; medians are reported")
	flag.IntVar(&cfg.watchers, "watchers", 100, "watchers in the watch phase")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "PHASE/BACKEND=FILE: CPU profile of that phase's first run (e.g. write/git=cpu.out)")
	flag.IntVar(&cfg.watchEvents, "watch-events", 2000, "changes written before the watch phase, then delivered to every watcher")
	flag.DurationVar(&cfg.drainTimeout, "drain-timeout", 60*time.Second, "how long watchers may lag behind the last write")
	flag.StringVar(&cfg.phases, "phases", "write,read,watch", "phases to run, comma-separated (RESULT then names only those)")
	flag.Parse()
	if err := selectPhases(cfg.phases); err != nil {
		fmt.Fprintln(os.Stderr, "bench-store:", err)
		os.Exit(2)
	}
	if cfg.writers < 1 || cfg.keys < cfg.writers || cfg.runs < 1 || cfg.watchers < 1 || cfg.duration <= 0 {
		fmt.Fprintln(os.Stderr, "bench-store: need writers ≥ 1, keys ≥ writers, runs ≥ 1, watchers ≥ 1, duration > 0")
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-store:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "bench-store")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer stopEtcd()
	gitURL, stopGit, err := startGit(filepath.Join(dir, "heavens.git"))
	if err != nil {
		return fmt.Errorf("starting the git store: %w", err)
	}
	defer stopGit()

	// In prefix mode the first key component names the branch.
	backends := []*backend{
		{name: "etcd", endpoint: etcdURL, prefix: "/registry/configmaps/default/"},
		{name: "git", endpoint: gitURL, prefix: "/bench/registry/configmaps/default/"},
	}
	for _, b := range backends {
		if err := b.connect(cfg); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		defer b.close()
	}

	if phases[0].name != "write" {
		// The read phase reads the keys the write phase writes.
		for _, b := range backends {
			if err := writeAllKeys(cfg, b); err != nil {
				return fmt.Errorf("%s: writing the keys: %w", b.name, err)
			}
		}
	}
	fmt.Printf("bench-store: %d writers, %d keys, %d-byte values, %d watchers, %v per run, %d runs, GOMAXPROCS=%d\n",
		cfg.writers, cfg.keys, len(configMap("cm-0", 0)), cfg.watchers, cfg.duration, cfg.runs, runtime.GOMAXPROCS(0))
	res := results{}
	for _, ph := range phases {
		for r := range cfg.runs {
			order := backends
			if r%2 == 1 {
				order = []*backend{backends[1], backends[0]}
			}
			for _, b := range order {
				stop := profile(cfg, ph.name, b.name, r)
				m, err := ph.run(cfg, b)
				stop()
				if err != nil {
					return fmt.Errorf("%s phase, %s, run %d: %w", ph.name, b.name, r+1, err)
				}
				res.add(ph.name, b.name, m)
				fmt.Fprintf(os.Stderr, "  %-5s %-4s run %d: %s\n", ph.name, b.name, r+1, m)
			}
		}
	}
	res.print(cfg)
	return nil
}

// ---- servers ----

// startEtcd starts the reference: a real etcd, durable as in production.
func startEtcd(dir string) (endpoint string, stop func(), err error) {
	e, err := etcdtest.Start(context.Background(), etcdtest.Config{Dir: dir, Fsync: true})
	if err != nil {
		return "", nil, err
	}
	return e.URL, e.Close, nil
}

func startGit(path string) (endpoint string, stop func(), err error) {
	repo, err := gitstore.Open(path, gitstore.Options{})
	if err != nil {
		return "", nil, err
	}
	srv, err := etcdv3.NewServer(repo, etcdv3.Config{RepositoryPath: path})
	if err != nil {
		repo.Close()
		return "", nil, err
	}
	l, err := etcdv3.Listen("http://127.0.0.1:0")
	if err != nil {
		repo.Close()
		return "", nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	return etcdv3.ListenerURL(l), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-served
		repo.Close()
	}, nil
}

// ---- clients and the key space ----

// backend is one server under test and the clients' view of it.
type backend struct {
	name, endpoint, prefix string
	clients                []*clientv3.Client // one per writer
	watchClients           []*clientv3.Client
	// modRevs[k] is the mod_revision of key k as last written, 0 before
	// its create; writer w owns the keys k with k % writers == w.
	modRevs []int64
	next    []int // per writer: the next of its keys to write
	seq     atomic.Int64
}

const watchConnections = 10

func (b *backend) connect(cfg config) error {
	newClient := func() (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{
			Endpoints: []string{b.endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop(),
			MaxCallRecvMsgSize: 64 << 20,
		})
	}
	for range cfg.writers {
		c, err := newClient()
		if err != nil {
			return err
		}
		b.clients = append(b.clients, c)
	}
	for range watchConnections {
		c, err := newClient()
		if err != nil {
			return err
		}
		b.watchClients = append(b.watchClients, c)
	}
	b.modRevs = make([]int64, cfg.keys)
	b.next = make([]int, cfg.writers)
	return nil
}

func (b *backend) close() {
	for _, c := range append(b.clients, b.watchClients...) {
		_ = c.Close()
	}
}

func (b *backend) key(k int) string { return b.prefix + "cm-" + strconv.Itoa(k) }

// write does writer w's next txn and returns its revision.
func (b *backend) write(ctx context.Context, cfg config, w int) (int64, error) {
	k := w + b.next[w]*cfg.writers
	if k >= cfg.keys {
		b.next[w], k = 0, w
	}
	b.next[w]++
	key := b.key(k)
	value := configMap("cm-"+strconv.Itoa(k), b.seq.Add(1))
	// As the kube-apiserver: compare, put, else read the current state.
	resp, err := b.clients[w].Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision(key), "=", b.modRevs[k])).
		Then(clientv3.OpPut(key, value)).
		Else(clientv3.OpGet(key)).
		Commit()
	if err != nil {
		return 0, err
	}
	if !resp.Succeeded {
		return 0, fmt.Errorf("txn on %s failed its compare against mod_revision %d", key, b.modRevs[k])
	}
	b.modRevs[k] = resp.Header.Revision
	return resp.Header.Revision, nil
}

// read does one read request for reader w.
func (b *backend) read(ctx context.Context, cfg config, w int, rnd *rand.Rand) error {
	key := b.key(rnd.IntN(cfg.keys))
	if rnd.IntN(10) > 0 {
		resp, err := b.clients[w].Get(ctx, key)
		if err == nil && len(resp.Kvs) != 1 {
			err = fmt.Errorf("get %s: %d values", key, len(resp.Kvs))
		}
		return err
	}
	_, err := b.clients[w].Get(ctx, key, clientv3.WithRange(clientv3.GetPrefixRangeEnd(b.prefix)), clientv3.WithLimit(100))
	return err
}

// configMap is a ConfigMap as a kube-apiserver stores it: about 600 bytes
// of compact JSON, different on every write.
func configMap(name string, seq int64) string {
	return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default",`+
		`"uid":"0b7c2a4e-5d6f-4a1b-8c3d-%012d","creationTimestamp":"2026-11-20T10:00:00Z",`+
		`"labels":{"app.kubernetes.io/name":"bench","app.kubernetes.io/part-of":"heaven"},`+
		`"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1",`+
		`"time":"2026-11-20T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:app.properties":{},"f:seq":{}}}}]},`+
		`"data":{"seq":"%012d","app.properties":"server.port=8080\nlog.level=info\ncache.size=512\nfeature.x=true\n"}}`,
		name, seq%1e12, seq%1e12)
}

// profile writes a CPU profile of one phase's first run on one backend
// when -cpuprofile names them (e.g. "write/git=cpu.out").
func profile(cfg config, phase, backend string, run int) func() {
	name, path, ok := strings.Cut(cfg.cpuProfile, "=")
	if !ok || name != phase+"/"+backend || run != 0 {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-store:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "bench-store:", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// ---- phases ----

type phase struct {
	name string
	run  func(cfg config, b *backend) (measurement, error)
}

var phases = []phase{
	{"write", writePhase},
	{"read", readPhase},
	{"watch", watchPhase},
}

// selectPhases keeps the phases named in list, in their usual order.
func selectPhases(list string) error {
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			want[name] = true
		}
	}
	var kept []phase
	for _, ph := range phases {
		if want[ph.name] {
			kept = append(kept, ph)
			delete(want, ph.name)
		}
	}
	if len(want) > 0 || len(kept) == 0 {
		return fmt.Errorf("-phases %q: choose among write, read, watch", list)
	}
	phases = kept
	return nil
}

// measurement is one run of one phase on one backend.
type measurement struct {
	perSecond float64
	p50, p99  time.Duration // request latency, where it applies
	note      string
}

func (m measurement) String() string {
	s := fmt.Sprintf("%.0f/s", m.perSecond)
	if m.p50 > 0 {
		s += fmt.Sprintf(" p50 %v p99 %v", m.p50.Round(10*time.Microsecond), m.p99.Round(10*time.Microsecond))
	}
	if m.note != "" {
		s += " " + m.note
	}
	return s
}

// load runs op on every writer until the duration ends and measures it.
// Requests are never cut off (a write cut off might or might not have
// landed); the last ones finish after the deadline and count.
func load(cfg config, op func(ctx context.Context, w int) (int64, error)) (ops int, lastRev int64, m measurement, err error) {
	ctx := context.Background()
	deadline := time.Now().Add(cfg.duration)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
		wg        sync.WaitGroup
	)
	start := time.Now()
	for w := range cfg.writers {
		wg.Go(func() {
			var lat []time.Duration
			var last int64
			for time.Now().Before(deadline) {
				t0 := time.Now()
				rev, err := op(ctx, w)
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					break
				}
				lat = append(lat, time.Since(t0))
				last = max(last, rev)
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			lastRev = max(lastRev, last)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return 0, 0, m, firstErr
	}
	slices.Sort(latencies)
	m.perSecond = float64(len(latencies)) / elapsed.Seconds()
	if n := len(latencies); n > 0 {
		m.p50, m.p99 = latencies[n/2], latencies[n*99/100]
	}
	return len(latencies), lastRev, m, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func writePhase(cfg config, b *backend) (measurement, error) {
	_, _, m, err := load(cfg, func(ctx context.Context, w int) (int64, error) {
		return b.write(ctx, cfg, w)
	})
	return m, err
}

func readPhase(cfg config, b *backend) (measurement, error) {
	rnds := make([]*rand.Rand, cfg.writers)
	for i := range rnds {
		rnds[i] = rand.New(rand.NewPCG(uint64(i), 42))
	}
	_, _, m, err := load(cfg, func(ctx context.Context, w int) (int64, error) {
		return 0, b.read(ctx, cfg, w, rnds[w])
	})
	return m, err
}

// watchPhase measures fan-out: it first writes cfg.watchEvents changes
// (not timed), then starts the watchers at the first of them and times how
// long it takes until every watcher has received every event. Writing
// first keeps the write speed of the backend out of the watch number.
func watchPhase(cfg config, b *backend) (measurement, error) {
	resp, err := b.clients[0].Get(context.Background(), b.prefix+"x")
	if err != nil {
		return measurement{}, err
	}
	from := resp.Header.Revision + 1
	lastRev, err := writeN(cfg, b, cfg.watchEvents)
	if err != nil {
		return measurement{}, err
	}
	want := lastRev - from + 1 // each revision is one event on the prefix

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var delivered atomic.Int64
	seen := make([]atomic.Int64, cfg.watchers) // last revision per watcher
	errs := make(chan error, cfg.watchers)
	start := time.Now()
	for i := range cfg.watchers {
		c := b.watchClients[i%len(b.watchClients)]
		ch := c.Watch(ctx, b.prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithPrevKV())
		go func() {
			for wr := range ch {
				if err := wr.Err(); err != nil {
					errs <- err
					return
				}
				if n := len(wr.Events); n > 0 {
					delivered.Add(int64(n))
					seen[i].Store(wr.Events[n-1].Kv.ModRevision)
				}
			}
		}()
	}
	drainBy := time.Now().Add(cfg.drainTimeout)
	for i := range seen {
		for seen[i].Load() < lastRev {
			select {
			case err := <-errs:
				return measurement{}, fmt.Errorf("watcher: %w", err)
			default:
			}
			if time.Now().After(drainBy) {
				return measurement{}, fmt.Errorf("watcher %d at revision %d, %v after start, want %d",
					i, seen[i].Load(), cfg.drainTimeout, lastRev)
			}
			time.Sleep(time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	got := delivered.Load()
	m := measurement{
		perSecond: float64(got) / elapsed.Seconds(),
		note:      fmt.Sprintf("(%d events × %d watchers in %v)", want, cfg.watchers, elapsed.Round(time.Millisecond)),
	}
	if got != want*int64(cfg.watchers) {
		return m, fmt.Errorf("watchers got %d events, want %d × %d", got, want, cfg.watchers)
	}
	return m, nil
}

// writeN makes n writes spread over the writers and returns the last
// revision.
// writeAllKeys writes every key once: each writer its own keys, in the
// order its writes in the write phase take them.
func writeAllKeys(cfg config, b *backend) error {
	g, ctx := errgroup.WithContext(context.Background())
	for w := range cfg.writers {
		g.Go(func() error {
			for k := w; k < cfg.keys; k += cfg.writers {
				if _, err := b.write(ctx, cfg, w); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

func writeN(cfg config, b *backend, n int) (int64, error) {
	var last atomic.Int64
	var next atomic.Int64
	g, ctx := errgroup.WithContext(context.Background())
	for w := range cfg.writers {
		g.Go(func() error {
			for next.Add(1) <= int64(n) {
				rev, err := b.write(ctx, cfg, w)
				if err != nil {
					return err
				}
				for cur := last.Load(); rev > cur && !last.CompareAndSwap(cur, rev); cur = last.Load() {
				}
			}
			return nil
		})
	}
	err := g.Wait()
	return last.Load(), err
}

// ---- results ----

type results map[string]map[string][]measurement // phase → backend → runs

func (r results) add(phase, backend string, m measurement) {
	if r[phase] == nil {
		r[phase] = map[string][]measurement{}
	}
	r[phase][backend] = append(r[phase][backend], m)
}

func (r results) median(phase, backend string) measurement {
	ms := slices.Clone(r[phase][backend])
	slices.SortFunc(ms, func(a, b measurement) int {
		switch {
		case a.perSecond < b.perSecond:
			return -1
		case a.perSecond > b.perSecond:
			return 1
		}
		return 0
	})
	return ms[len(ms)/2]
}

func (r results) print(cfg config) {
	fmt.Println()
	head := fmt.Sprintf("%-6s %-5s", "phase", "store")
	for i := range cfg.runs {
		head += fmt.Sprintf(" %10s", fmt.Sprintf("run %d", i+1))
	}
	head += fmt.Sprintf(" %10s %10s %10s %7s", "median", "p50", "p99", "git/etcd")
	fmt.Println(head)
	fmt.Println(strings.Repeat("-", len(head)))
	ratios := map[string]float64{}
	for _, ph := range phases {
		etcd := r.median(ph.name, "etcd").perSecond
		for _, b := range []string{"etcd", "git"} {
			line := fmt.Sprintf("%-6s %-5s", ph.name, b)
			for _, m := range r[ph.name][b] {
				line += fmt.Sprintf(" %10.0f", m.perSecond)
			}
			med := r.median(ph.name, b)
			line += fmt.Sprintf(" %10.0f %10s %10s", med.perSecond, latency(med.p50), latency(med.p99))
			if b == "git" {
				ratios[ph.name] = med.perSecond / etcd
				line += fmt.Sprintf(" %7.2f", ratios[ph.name])
			}
			fmt.Println(line)
		}
	}
	fmt.Println()
	fmt.Println("write: txns/s; read: requests/s (9 gets : 1 list of 100); watch: events/s delivered to all watchers")
	result := "RESULT"
	for _, ph := range phases {
		result += fmt.Sprintf(" %s_ratio=%.2f", ph.name, ratios[ph.name])
	}
	fmt.Println(result)
}

func latency(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(10 * time.Microsecond).String()
}
