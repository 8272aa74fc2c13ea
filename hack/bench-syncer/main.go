// Command bench-syncer measures the syncer end to end: heaven-server and the
// syncer run in this process, the physical cluster is a real kube-apiserver
// and kube-controller-manager started by test/e2e/framework (their binaries
// from `make kube-binaries`, or KUBE_APISERVER and KUBE_CONTROLLER_MANAGER).
//
// Two phases, with the syncer's default options unless flags say otherwise:
//
//	initial  -objects labelled configmaps and -deployments labelled
//	         Deployments are created in a heaven (-creators at a time). The
//	         time is taken from the first create until every object exists in
//	         the physical cluster and every Deployment's status, written there
//	         by kube-controller-manager, is back in the heaven.
//	update   -updates single updates, one after the other: a configmap of
//	         the heaven is patched and the time taken until the physical
//	         cluster's copy has the new data (seen by a watch).
//
// The last line is
//
//	RESULT initial_sync_s=… update_p50_ms=… update_p99_ms=…
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/pkg/syncer"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

const (
	heaven = "bench"
	target = "phys"
	ns     = "bench"
)

type config struct {
	objects, deployments, creators, updates int
	workers                                 int
	qps                                     float64
	burst                                   int
	timeout                                 time.Duration
	cpuProfile                              string
	keep, verbose                           bool
}

func main() {
	var cfg config
	defaults := syncer.NewOptions()
	flag.IntVar(&cfg.objects, "objects", 1000, "initial phase: labelled configmaps created in the heaven")
	flag.IntVar(&cfg.deployments, "deployments", 20, "initial phase: labelled Deployments (1 replica) created in the heaven besides the configmaps")
	flag.IntVar(&cfg.creators, "creators", 8, "initial phase: creates in flight at a time")
	flag.IntVar(&cfg.updates, "updates", 200, "update phase: single updates timed one after the other")
	flag.IntVar(&cfg.workers, "workers", defaults.Workers, "the syncer's --workers")
	flag.Float64Var(&cfg.qps, "qps", float64(defaults.QPS), "the syncer's --qps")
	flag.IntVar(&cfg.burst, "burst", defaults.Burst, "the syncer's --burst")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "give up a phase after this long")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (heaven-server, syncer, benchmark) during both phases to this file")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the data directories (their path is printed)")
	flag.BoolVar(&cfg.verbose, "verbose", false, "show the logs of heaven-server and the syncer")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: bench-syncer [flags]\n\n"+
			"Runs heaven-server and the syncer in this process against a real physical\n"+
			"cluster and measures the initial sync of many objects and the latency of\n"+
			"single updates from the heaven to the cluster.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.objects < 1 || cfg.deployments < 0 || cfg.creators < 1 || cfg.updates < 1 {
		fmt.Fprintln(os.Stderr, "bench-syncer: -objects, -creators and -updates must be positive, -deployments not negative")
		os.Exit(2)
	}
	if !cfg.verbose {
		klog.SetLogger(logr.Discard())
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-syncer:", err)
		os.Exit(1)
	}
}

func run(cfg config) (err error) {
	dir, err := os.MkdirTemp("", "bench-syncer-")
	if err != nil {
		return err
	}
	defer func() {
		if cfg.keep || err != nil {
			fmt.Println("# data and logs kept in", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	env, err := start(ctx, cfg, dir)
	if env != nil {
		defer env.stop()
	}
	if err != nil {
		return err
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	initial, err := env.initialPhase(ctx, cfg)
	if err != nil {
		return fmt.Errorf("initial phase: %w", err)
	}
	latencies, err := env.updatePhase(ctx, cfg)
	if err != nil {
		return fmt.Errorf("update phase: %w", err)
	}
	fmt.Printf("# update latency over %d updates: min %v, p50 %v, p90 %v, p99 %v, max %v\n", len(latencies),
		latencies[0], percentile(latencies, 50), percentile(latencies, 90), percentile(latencies, 99), latencies[len(latencies)-1])
	fmt.Printf("RESULT initial_sync_s=%.2f update_p50_ms=%.1f update_p99_ms=%.1f\n",
		initial.Seconds(), ms(percentile(latencies, 50)), ms(percentile(latencies, 99)))
	return nil
}

// env is what runs: the physical cluster, heaven-server, the syncer, and
// clients of both sides.
type env struct {
	phys        *framework.Cluster
	hs          *framework.HeavenServer
	stopSyncer  func()
	up, down    kubernetes.Interface
	downNS      string
	syncerAddr  string
	syncerStart time.Time
}

// start starts the cluster and heaven-server at once, then the syncer.
func start(ctx context.Context, cfg config, dir string) (*env, error) {
	e := &env{downNS: syncer.DownstreamNamespace(heaven, target, ns)}
	began := time.Now()
	var physErr, hsErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		physDir := filepath.Join(dir, "cluster")
		if physErr = os.Mkdir(physDir, 0o700); physErr == nil {
			e.phys, physErr = framework.NewCluster(ctx, "bench", physDir)
		}
	})
	wg.Go(func() { e.hs, hsErr = framework.NewHeavenServer(ctx, filepath.Join(dir, "heaven"), nil) })
	wg.Wait()
	if err := errors.Join(physErr, hsErr); err != nil {
		return e, err
	}
	fmt.Printf("# physical cluster and heaven-server ready in %v\n", time.Since(began).Round(time.Millisecond))

	upConfig := e.hs.RESTConfig(heaven)
	upConfig.QPS, upConfig.Burst = -1, 0 // the benchmark's own clients are not throttled
	e.up = kubernetes.NewForConfigOrDie(upConfig)
	downConfig := e.phys.RESTConfig()
	downConfig.QPS, downConfig.Burst = -1, 0
	e.down = kubernetes.NewForConfigOrDie(downConfig)

	if _, err := e.up.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return e, err
	}
	if err := e.createSyncTarget(ctx); err != nil {
		return e, fmt.Errorf("SyncTarget: %w", err)
	}
	return e, e.startSyncer(ctx, cfg, dir)
}

func (e *env) stop() {
	if e.stopSyncer != nil {
		e.stopSyncer()
	}
	if e.hs != nil {
		if err := e.hs.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-syncer: heaven-server:", err)
		}
	}
	if e.phys != nil {
		if err := e.phys.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench-syncer: physical cluster:", err)
		}
	}
}

// createSyncTarget creates the SyncTarget of the physical cluster for the
// heaven, for the syncer run here (no kubeconfig: nothing is installed). It
// is the one place that knows where SyncTargets live.
func (e *env) createSyncTarget(ctx context.Context) error {
	st := &v1alpha1.SyncTarget{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"},
		ObjectMeta: metav1.ObjectMeta{Name: target},
		Spec:       v1alpha1.SyncTargetSpec{Heaven: heaven},
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	if err != nil {
		return err
	}
	targets := e.hs.Dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource)
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = targets.Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
		return last == nil, nil // root serves SyncTargets a moment after it starts
	})
	if err != nil {
		return fmt.Errorf("%w (last error: %v)", err, last)
	}
	return nil
}

// startSyncer runs the syncer as cmd/syncer does and waits until it is
// ready (every type resolved, informers synced).
func (e *env) startSyncer(ctx context.Context, cfg config, dir string) error {
	o := syncer.NewOptions()
	o.UpstreamKubeconfig = filepath.Join(dir, "upstream.kubeconfig")
	if err := e.hs.WriteKubeconfig(heaven, o.UpstreamKubeconfig); err != nil {
		return err
	}
	o.DownstreamKubeconfig = e.phys.Kubeconfig
	o.SyncTarget = target
	o.Resources = []string{"configmaps", "deployments.apps"}
	o.Workers, o.QPS, o.Burst = cfg.workers, float32(cfg.qps), cfg.burst
	o.MetricsBindAddress = "127.0.0.1:0"
	if errs := o.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	c, err := o.Config()
	if err != nil {
		return err
	}
	s, err := c.Complete().New()
	if err != nil {
		return err
	}
	e.syncerAddr = c.MetricsAddr()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	e.stopSyncer = func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "bench-syncer: syncer:", err)
		}
	}
	e.syncerStart = time.Now()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, cfg.timeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.syncerGet(ctx, "/readyz")
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the syncer is not ready: %w", err)
	}
	fmt.Printf("# syncer ready in %v (%d workers, %.0f qps, burst %d)\n",
		time.Since(e.syncerStart).Round(time.Millisecond), cfg.workers, cfg.qps, cfg.burst)
	return nil
}

func (e *env) syncerGet(ctx context.Context, path string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.syncerAddr+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", path, resp.Status, body)
	}
	return string(body), err
}

// ---- initial phase ----

// initialPhase creates the objects and returns the time from the first
// create until all of them exist downstream and every Deployment's status
// is back in the heaven.
func (e *env) initialPhase(ctx context.Context, cfg config) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	w := newInitialWatch(cfg)
	stop, err := w.run(ctx, e)
	if err != nil {
		return 0, err
	}
	defer stop()

	began := time.Now()
	if err := e.createAll(ctx, cfg); err != nil {
		return 0, err
	}
	created := time.Since(began)
	select {
	case <-w.down.done:
	case <-ctx.Done():
		return 0, fmt.Errorf("%d of %d objects downstream after %v", w.down.count(), w.down.want, cfg.timeout)
	}
	downstream := time.Since(began)
	select {
	case <-w.status.done:
	case <-ctx.Done():
		return 0, fmt.Errorf("%d of %d Deployments with status in the heaven after %v", w.status.count(), w.status.want, cfg.timeout)
	}
	total := time.Since(began)
	fmt.Printf("# initial: %d configmaps and %d Deployments created in the heaven in %v; all downstream after %v; all status up after %v\n",
		cfg.objects, cfg.deployments, created.Round(time.Millisecond), downstream.Round(time.Millisecond), total.Round(time.Millisecond))
	if metrics, err := e.syncerGet(ctx, "/metrics"); err == nil {
		fmt.Printf("# syncer writes: %s\n", writes(metrics))
	}
	return total, nil
}

// initialWatch counts, by watching, the objects that exist downstream and
// the Deployments whose status is back in the heaven.
type initialWatch struct {
	down, status *countdown
}

func newInitialWatch(cfg config) *initialWatch {
	return &initialWatch{down: newCountdown(cfg.objects + cfg.deployments), status: newCountdown(cfg.deployments)}
}

// run starts the informers and returns once they have synced.
func (w *initialWatch) run(ctx context.Context, e *env) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	downFactory := informers.NewSharedInformerFactoryWithOptions(e.down, 0, informers.WithNamespace(e.downNS))
	upFactory := informers.NewSharedInformerFactoryWithOptions(e.up, 0, informers.WithNamespace(ns))
	onDown := func(obj any) {
		if m, ok := obj.(metav1.Object); ok {
			w.down.mark(fmt.Sprintf("%T/%s", obj, m.GetName()))
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: onDown, UpdateFunc: func(_, obj any) { onDown(obj) }}
	_, _ = downFactory.Core().V1().ConfigMaps().Informer().AddEventHandler(handler)
	_, _ = downFactory.Apps().V1().Deployments().Informer().AddEventHandler(handler)
	onUp := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok && deploymentObserved(d) {
			w.status.mark(d.Name)
		}
	}
	_, _ = upFactory.Apps().V1().Deployments().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onUp, UpdateFunc: func(_, obj any) { onUp(obj) },
	})
	downFactory.Start(ctx.Done())
	upFactory.Start(ctx.Done())
	stop = func() {
		cancel()
		downFactory.Shutdown()
		upFactory.Shutdown()
	}
	if !cache.WaitForCacheSync(ctx.Done(),
		downFactory.Core().V1().ConfigMaps().Informer().HasSynced, downFactory.Apps().V1().Deployments().Informer().HasSynced,
		upFactory.Apps().V1().Deployments().Informer().HasSynced) {
		stop()
		return nil, errors.New("informers did not sync")
	}
	return stop, nil
}

// countdown closes done once want distinct keys were marked.
type countdown struct {
	mu   sync.Mutex
	seen map[string]bool
	want int
	done chan struct{}
}

func newCountdown(want int) *countdown {
	c := &countdown{seen: map[string]bool{}, want: want, done: make(chan struct{})}
	if want == 0 {
		close(c.done)
	}
	return c
}

func (c *countdown) mark(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	if len(c.seen) == c.want {
		close(c.done)
	}
}

func (c *countdown) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// deploymentObserved reports whether a heaven Deployment carries the status
// of its copy for its current spec.
func deploymentObserved(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration == d.Generation && d.Spec.Replicas != nil &&
		d.Status.Replicas == *d.Spec.Replicas && len(d.Status.Conditions) > 0
}

// createAll creates the configmaps and Deployments, cfg.creators at a time.
func (e *env) createAll(ctx context.Context, cfg config) error {
	labels := map[string]string{v1alpha1.ClusterLabel: target, "app": "bench"}
	jobs := make(chan func(context.Context) error)
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range cfg.creators {
		wg.Go(func() {
			for job := range jobs {
				if err := job(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
				}
			}
		})
	}
	for i := range cfg.objects {
		jobs <- func(ctx context.Context) error {
			_, err := e.up.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Labels: labels},
				Data:       map[string]string{"index": fmt.Sprint(i), "seq": "0"},
			}, metav1.CreateOptions{})
			return err
		}
	}
	for i := range cfg.deployments {
		jobs <- func(ctx context.Context) error {
			_, err := e.up.AppsV1().Deployments(ns).Create(ctx, deployment(fmt.Sprintf("web-%03d", i), labels), metav1.CreateOptions{})
			return err
		}
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

func deployment(name string, labels map[string]string) *appsv1.Deployment {
	selector := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// writes is a summary of the syncer's heaven_syncer_writes_total.
func writes(metrics string) string {
	var out []string
	for _, l := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(l, "heaven_syncer_writes_total{") {
			continue
		}
		resource := labelValue(l, "resource")
		write := labelValue(l, "write")
		out = append(out, resource+"/"+write+"="+l[strings.LastIndex(l, " ")+1:])
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func labelValue(line, name string) string {
	_, rest, ok := strings.Cut(line, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// ---- update phase ----

// updatePhase patches one configmap at a time in the heaven and returns
// the sorted latencies until each change was seen downstream.
func (e *env) updatePhase(ctx context.Context, cfg config) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	seen := newSeqWatch()
	factory := informers.NewSharedInformerFactoryWithOptions(e.down, 0, informers.WithNamespace(e.downNS))
	_, _ = factory.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    seen.observe,
		UpdateFunc: func(_, obj any) { seen.observe(obj) },
	})
	informerCtx, stopInformer := context.WithCancel(ctx)
	factory.Start(informerCtx.Done())
	defer factory.Shutdown()
	defer stopInformer() // before Shutdown, which waits for the informer
	if !cache.WaitForCacheSync(ctx.Done(), factory.Core().V1().ConfigMaps().Informer().HasSynced) {
		return nil, errors.New("informer did not sync")
	}

	latencies := make([]time.Duration, 0, cfg.updates)
	for i := range cfg.updates {
		name := fmt.Sprintf("cm-%04d", (i*7919)%cfg.objects) // spread over the objects
		seq := fmt.Sprint(i + 1)
		arrived := seen.expect(name, seq)
		began := time.Now()
		_, err := e.up.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType,
			[]byte(`{"data":{"seq":"`+seq+`"}}`), metav1.PatchOptions{})
		if err != nil {
			return nil, fmt.Errorf("patching %s: %w", name, err)
		}
		select {
		case <-arrived:
			latencies = append(latencies, time.Since(began))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("update %d of %s not downstream after 30s", i+1, name)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	slices.Sort(latencies)
	return latencies, nil
}

// seqWatch tells when a downstream configmap carries an expected seq.
type seqWatch struct {
	mu      sync.Mutex
	name    string
	seq     string
	arrived chan struct{}
}

func newSeqWatch() *seqWatch { return &seqWatch{} }

// expect arms the watch for name reaching seq.
func (w *seqWatch) expect(name, seq string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.name, w.seq, w.arrived = name, seq, make(chan struct{})
	return w.arrived
}

func (w *seqWatch) observe(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.arrived != nil && cm.Name == w.name && cm.Data["seq"] == w.seq {
		close(w.arrived)
		w.arrived = nil
	}
}

func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p+99)/100 - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
