// Command bench-server runs heaven-server in this process and measures it
// end to end, through client-go over HTTPS, as a user of many heavens would.
//
// Four phases; when several run, each runs in a fresh bench-server process,
// so that what one measures is not shaped by what another left in the heap:
//
//	load   for each storage backend (--storage=git, then --storage=etcd, each
//	       on a fresh data directory, alternating which goes first), N heavens
//	       with M configmap writers each plus one widget (CR) writer each,
//	       then the same number of readers (9 in 10 get one configmap, 1 in
//	       10 lists them). Successful operations per second; the medians of
//	       the runs and git/etcd ratios are reported.
//	scale  git only. A server with a short idle timeout first creates the
//	       heavens that will be stopped (one configmap each; they idle out as
//	       it goes). Then a server with a long idle timeout on the same data
//	       creates the active heavens (a CRD, 3 configmaps and a widget each)
//	       and the process RSS is measured before and after. Finally the
//	       first request to 20 stopped heavens is timed (cold start).
//	rbac   git only. The load phase as a tenant whose rights the heavens'
//	       RBAC decides (a ClusterRoleBinding to cluster-admin) against as
//	       the admin (system:masters, allowed before RBAC), alternating;
//	       tenant/admin ratios of the medians: the cost of authorization.
//	types  git only. Generic and kubernetes heavens doing the same work
//	       (kubernetes ones also get a NodePort Service): RSS per active
//	       heaven and cold-start p50 of each type, kubernetes/generic ratios.
//
// The last line is
//
//	RESULT write_ratio=… read_ratio=… active_heaven_mib=… heavens=… active=… rss_gib=… cold_start_ms_p50=… rbac_write_ratio=… rbac_read_ratio=…
//	       generic_heaven_mib=… kubernetes_heaven_mib=… generic_cold_ms_p50=… kubernetes_cold_ms_p50=…
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

type config struct {
	heavens      int
	writers      int
	keys         int
	duration     time.Duration
	runs         int
	scaleHeavens int
	scaleActive  int
	coldStarts   int
	typeHeavens  int
	parallel     int
	shortIdle    time.Duration
	phases       string
	keep         bool
	verbose      bool
	heapProfile  string
	cpuProfile   string
}

const ns = "default"

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func main() {
	var cfg config
	flag.IntVar(&cfg.heavens, "heavens", 4, "load phase: heavens loaded at the same time")
	flag.IntVar(&cfg.writers, "writers", 4, "load phase: configmap writers per heaven (and readers per heaven in the read phase); each heaven also gets one widget writer")
	flag.IntVar(&cfg.keys, "keys", 50, "load phase: distinct configmaps (and widgets) per heaven")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "load phase: length of the write phase and of the read phase of each run")
	flag.IntVar(&cfg.runs, "runs", 3, "load phase: runs per backend, alternating git and etcd; medians are reported")
	flag.IntVar(&cfg.scaleHeavens, "scale-heavens", 10000, "scale phase: heavens that exist at the end (active ones included)")
	flag.IntVar(&cfg.scaleActive, "scale-active", 1000, "scale phase: heavens kept running, each with a CRD, 3 configmaps and a widget")
	flag.IntVar(&cfg.coldStarts, "cold-starts", 20, "scale phase: stopped heavens whose first request is timed")
	flag.IntVar(&cfg.typeHeavens, "type-heavens", 50, "types phase: active heavens of each type (-cold-starts stopped ones of each type are timed)")
	flag.IntVar(&cfg.parallel, "parallel", 8, "scale phase: heavens created concurrently")
	flag.DurationVar(&cfg.shortIdle, "short-idle", 2*time.Second, "scale phase: idle timeout of the server that creates the heavens that end up stopped")
	flag.StringVar(&cfg.phases, "phases", strings.Join(allPhases, ","), "phases to run, comma-separated, each in a process of its own when there are several (a phase not run reports 0 in RESULT)")
	flag.BoolVar(&cfg.keep, "keep", false, "keep the data directories (their paths are printed)")
	flag.BoolVar(&cfg.verbose, "verbose", false, "show heaven-server's log")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "load phase: write a CPU profile (go tool pprof) of the first write phase with git storage here")
	flag.StringVar(&cfg.heapProfile, "heap-profile", "", "scale and types phases: write a heap profile (go tool pprof) here once the active heavens (of type kubernetes) run, and their goroutines to the same path + .goroutines; the scale phase also writes the heap before it starts them to path + .before")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: bench-server [flags]\n\n"+
			"Runs heaven-server in this process and measures it through client-go:\n"+
			"git vs etcd storage under the same load, then memory per active heaven,\n"+
			"number of heavens and cold start time with the git storage.\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if cfg.heavens < 1 || cfg.writers < 1 || cfg.keys < 1 || cfg.runs < 1 || cfg.scaleActive < 0 || cfg.scaleHeavens < cfg.scaleActive || cfg.parallel < 1 {
		fmt.Fprintln(os.Stderr, "bench-server: -heavens, -writers, -keys, -runs, -parallel must be positive and -scale-heavens >= -scale-active >= 0")
		os.Exit(2)
	}
	if !cfg.verbose {
		// heaven-server's log (and the API servers' errors about requests
		// the benchmark cancels at the end of a phase) would drown the
		// results.
		klog.SetLogger(logr.Discard())
	}
	var phases []string
	for _, p := range strings.Split(cfg.phases, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
	}
	for _, p := range phases {
		if !slices.Contains(allPhases, p) {
			fmt.Fprintf(os.Stderr, "bench-server: unknown phase %q (phases: %s)\n", p, strings.Join(allPhases, ","))
			os.Exit(2)
		}
	}

	res := results{}
	for _, p := range phases {
		var r results
		var err error
		if len(phases) == 1 {
			r, err = runPhase(p, cfg)
		} else {
			r, err = runPhaseInChild(p)
		}
		if err != nil {
			fail(err)
		}
		res.add(r)
	}
	fmt.Println(res)
}

// allPhases are the phases in the order they run by default.
var allPhases = []string{"load", "rbac", "scale", "types"}

// runPhase runs one phase in this process.
func runPhase(phase string, cfg config) (results, error) {
	switch phase {
	case "load":
		w, r, err := loadPhase(cfg)
		return results{"write_ratio": w, "read_ratio": r}, err
	case "rbac":
		w, r, err := rbacPhase(cfg)
		return results{"rbac_write_ratio": w, "rbac_read_ratio": r}, err
	case "scale":
		s, err := scalePhase(cfg)
		return results{
			"active_heaven_mib": s.activeMiB, "heavens": float64(s.heavens), "active": float64(s.active),
			"rss_gib": s.rssGiB, "cold_start_ms_p50": s.coldP50,
		}, err
	case "types":
		t, err := typesPhase(cfg)
		return results{
			"generic_heaven_mib": t.genericMiB, "kubernetes_heaven_mib": t.kubernetesMiB,
			"generic_cold_ms_p50": t.genericCold, "kubernetes_cold_ms_p50": t.kubernetesCold,
		}, err
	}
	return nil, fmt.Errorf("unknown phase %q", phase)
}

// runPhaseInChild runs one phase in a new bench-server process, with this
// one's flags, and returns what its RESULT line says. Each phase gets a
// fresh process because memory is measured: a heap that earlier phases
// grew raises the collector's target, and more of the active heavens'
// start-up garbage then lies between their live objects when the scale
// phase measures (one run each: 4.29 MiB per active heaven after the load
// and rbac phases, 3.43 alone).
func runPhaseInChild(phase string) (results, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// The last -phases wins.
	cmd := exec.Command(self, append(os.Args[1:], "-phases="+phase)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var res results
	var perr error
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			res, perr = parseResults(rest)
			continue
		}
		fmt.Println(line)
	}
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("phase %s: %w", phase, err)
	}
	if perr != nil {
		return nil, fmt.Errorf("phase %s: %w", phase, perr)
	}
	if res == nil {
		return nil, fmt.Errorf("phase %s printed no RESULT line", phase)
	}
	return res, nil
}

// results are the RESULT line's values by name; a phase not run reports 0.
type results map[string]float64

// resultNames are the RESULT line's names, in order.
var resultNames = []string{
	"write_ratio", "read_ratio", "active_heaven_mib", "heavens", "active", "rss_gib", "cold_start_ms_p50",
	"rbac_write_ratio", "rbac_read_ratio",
	"generic_heaven_mib", "kubernetes_heaven_mib", "generic_cold_ms_p50", "kubernetes_cold_ms_p50",
}

// add takes the values that r measured (those not 0).
func (res results) add(r results) {
	for k, v := range r {
		if v != 0 {
			res[k] = v
		}
	}
}

func (res results) String() string {
	var b strings.Builder
	b.WriteString("RESULT")
	for _, k := range resultNames {
		if k == "heavens" || k == "active" {
			fmt.Fprintf(&b, " %s=%d", k, int(res[k]))
		} else {
			fmt.Fprintf(&b, " %s=%.2f", k, res[k])
		}
	}
	return b.String()
}

func parseResults(line string) (results, error) {
	res := results{}
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("RESULT field %q is not name=value", f)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("RESULT field %q: %w", f, err)
		}
		res[k] = x
	}
	return res, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-server:", err)
	os.Exit(1)
}

// ---- the server ----

// benchServer is heaven-server in this process, started as the tests start
// it (framework.NewHeavenServer).
type benchServer struct {
	*framework.HeavenServer
	keep    bool
	stopped bool
}

// startServer runs heaven-server on a free port with its data in dataDir
// (a new temporary directory if empty) and waits until the root heaven
// serves Heaven objects.
func startServer(storage string, idle time.Duration, dataDir string, keep bool) (*benchServer, error) {
	if dataDir == "" {
		d, err := os.MkdirTemp("", "bench-server-"+storage+"-")
		if err != nil {
			return nil, err
		}
		dataDir = d
	}
	hs, err := framework.NewHeavenServer(context.Background(), dataDir, func(o *server.Options) {
		o.Storage = storage
		o.IdleTimeout = idle
		// A thousand active heavens take a while to stop.
		o.ShutdownTimeout = server.NewOptions().ShutdownTimeout
	})
	bs := &benchServer{HeavenServer: hs, keep: keep}
	if err != nil {
		bs.stop()
		return nil, err
	}
	return bs, nil
}

// stop stops heaven-server; later calls do nothing.
func (bs *benchServer) stop() {
	if bs.stopped {
		return
	}
	bs.stopped = true
	if err := bs.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "bench-server: heaven-server:", err)
	}
}

func (bs *benchServer) remove() {
	if bs.keep {
		fmt.Println("# kept data dir", bs.DataDir)
		return
	}
	_ = os.RemoveAll(bs.DataDir)
}

// restConfig is the admin's config for heaven name, without a client-side
// rate limit.
func (bs *benchServer) restConfig(name string) *rest.Config {
	c := bs.RESTConfig(name)
	c.QPS, c.Burst = -1, 0
	return c
}

// tenantConfig binds cluster-admin to tenantUser in heaven name and
// returns a config with a certificate of that user.
func (bs *benchServer) tenantConfig(ctx context.Context, name string) (*rest.Config, error) {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: tenantUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: tenantUser}},
	}
	admin := kubernetes.NewForConfigOrDie(bs.restConfig(name))
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	ca, err := pki.LoadCA(filepath.Join(bs.DataDir, "pki"))
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.IssueClientCert(tenantUser, nil, time.Hour)
	if err != nil {
		return nil, err
	}
	c := rest.AnonymousClientConfig(bs.restConfig(name))
	c.CertData, c.KeyData = certPEM, keyPEM
	// Wait until the binding is in effect.
	tenant := kubernetes.NewForConfigOrDie(c)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := tenant.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the tenant's binding never took effect: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rbacPhase compares load runs as a tenant whose rights RBAC decides with
// runs as the admin, alternating, on git storage: the cost of
// authorization. Ratios are tenant/admin of the medians.
func rbacPhase(cfg config) (writeRatio, readRatio float64, err error) {
	fmt.Printf("# rbac: the load phase as %s (cluster-admin by a ClusterRoleBinding) against as the admin (system:masters), git storage, %d runs each\n", tenantUser, cfg.runs)
	var admin, tenant []loadRun
	for run := 0; run < cfg.runs; run++ {
		order := []bool{false, true}
		if run%2 == 1 {
			slices.Reverse(order)
		}
		for _, asTenant := range order {
			r, err := loadAs(cfg, server.StorageGit, asTenant)
			if err != nil {
				return 0, 0, fmt.Errorf("rbac run %d (tenant %v): %w", run+1, asTenant, err)
			}
			who := "admin"
			if asTenant {
				who = "tenant"
				tenant = append(tenant, r)
			} else {
				admin = append(admin, r)
			}
			fmt.Printf("run=%d as=%s write_ops/s=%.1f (errors %d) read_ops/s=%.1f (errors %d)\n", run+1, who, r.writes, r.writeErrs, r.reads, r.readErrs)
		}
	}
	med := func(rs []loadRun, f func(loadRun) float64) float64 {
		var v []float64
		for _, r := range rs {
			v = append(v, f(r))
		}
		return median(v)
	}
	writes, reads := func(r loadRun) float64 { return r.writes }, func(r loadRun) float64 { return r.reads }
	fmt.Printf("median admin write_ops/s=%.1f read_ops/s=%.1f; tenant write_ops/s=%.1f read_ops/s=%.1f\n",
		med(admin, writes), med(admin, reads), med(tenant, writes), med(tenant, reads))
	return ratio(med(tenant, writes), med(admin, writes)), ratio(med(tenant, reads), med(admin, reads)), nil
}

// activeHeavens reads heaven_active_heavens from /metrics.
func (bs *benchServer) activeHeavens() (int, error) {
	tlsCfg, err := rest.TLSConfigFor(bs.RESTConfig(server.RootHeaven))
	if err != nil {
		return 0, err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 30 * time.Second}
	resp, err := hc.Get(bs.URL() + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "heaven_active_heavens "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("no heaven_active_heavens in /metrics (status %s)", resp.Status)
}

// ---- heavens' contents ----

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", XPreserveUnknownFields: ptr(true)},
					},
				}},
			}},
		},
	}
}

func ptr[T any](v T) *T { return &v }

func widget(name string, n int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"size": int64(n), "color": "blue"},
	}}
}

func configMap(name string, n int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       map[string]string{"n": strconv.Itoa(n), "payload": strings.Repeat("x", 64)},
	}
}

// installCRD creates the widget CRD in a heaven and waits until widgets are
// served.
func installCRD(ctx context.Context, rc *rest.Config) error {
	ext, err := apiextensionsclient.NewForConfig(rc)
	if err != nil {
		return err
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD: %w", err)
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = dyn.Resource(widgetsGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("widgets not served: %v (last: %v)", err, last)
	}
	return nil
}

// ---- load phase ----

type loadRun struct {
	writes, cmWrites, crWrites, reads float64 // per second
	writeErrs, readErrs               int64
}

func loadPhase(cfg config) (writeRatio, readRatio float64, err error) {
	fmt.Printf("# load: %d heavens x (%d configmap writers + 1 widget writer), %d keys per heaven, %s per phase, %d runs per backend\n",
		cfg.heavens, cfg.writers, cfg.keys, cfg.duration, cfg.runs)
	results := map[string][]loadRun{}
	for run := 0; run < cfg.runs; run++ {
		order := []string{server.StorageGit, server.StorageEtcd}
		if run%2 == 1 {
			slices.Reverse(order)
		}
		for _, storage := range order {
			r, err := loadOnce(cfg, storage)
			if err != nil {
				return 0, 0, fmt.Errorf("load run %d, %s: %w", run+1, storage, err)
			}
			fmt.Printf("run=%d storage=%s write_ops/s=%.1f (configmaps %.1f, widgets %.1f, errors %d) read_ops/s=%.1f (errors %d)\n",
				run+1, storage, r.writes, r.cmWrites, r.crWrites, r.writeErrs, r.reads, r.readErrs)
			results[storage] = append(results[storage], r)
		}
	}
	med := func(storage string, f func(loadRun) float64) float64 {
		var v []float64
		for _, r := range results[storage] {
			v = append(v, f(r))
		}
		return median(v)
	}
	gw, ew := med(server.StorageGit, func(r loadRun) float64 { return r.writes }), med(server.StorageEtcd, func(r loadRun) float64 { return r.writes })
	gr, er := med(server.StorageGit, func(r loadRun) float64 { return r.reads }), med(server.StorageEtcd, func(r loadRun) float64 { return r.reads })
	fmt.Printf("median git write_ops/s=%.1f read_ops/s=%.1f; etcd write_ops/s=%.1f read_ops/s=%.1f\n", gw, gr, ew, er)
	return ratio(gw, ew), ratio(gr, er), nil
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// cpuProfiled: the CPU profile (-cpuprofile) was taken.
var cpuProfiled bool

func loadOnce(cfg config, storage string) (loadRun, error) { return loadAs(cfg, storage, false) }

// tenantUser is who the rbac phase's tenant runs are made as: bound to
// cluster-admin in each heaven by RBAC, where the admin is a member of
// system:masters, allowed before RBAC is asked.
const tenantUser = "bench-tenant"

// loadAs is one load run, as the admin or, with tenant, as tenantUser.
func loadAs(cfg config, storage string, tenant bool) (loadRun, error) {
	var r loadRun
	bs, err := startServer(storage, time.Hour, "", cfg.keep)
	if err != nil {
		return r, err
	}
	defer bs.remove()
	defer bs.stop()

	type heavenClients struct {
		kube kubernetes.Interface
		dyn  dynamic.Interface
	}
	hcs := make([]heavenClients, cfg.heavens)
	ctx := context.Background()
	for i := range hcs {
		name := fmt.Sprintf("load-%d", i)
		rc := bs.restConfig(name)
		if err := installCRD(ctx, rc); err != nil {
			return r, fmt.Errorf("heaven %s: %w", name, err)
		}
		if tenant {
			if rc, err = bs.tenantConfig(ctx, name); err != nil {
				return r, fmt.Errorf("heaven %s: %w", name, err)
			}
		}
		hcs[i] = heavenClients{kubernetes.NewForConfigOrDie(rc), dynamic.NewForConfigOrDie(rc)}
	}

	// Write phase. Writer w of a heaven owns the keys k with k%writers == w,
	// so its updates (with the resourceVersion it last saw) never conflict
	// with another writer's; the widget writer owns every widget key.
	var cmOps, crOps, wErrs atomic.Int64
	if cfg.cpuProfile != "" && storage == server.StorageGit && !cpuProfiled {
		cpuProfiled = true
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return r, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return r, err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.duration)
	var wg sync.WaitGroup
	began := time.Now()
	for h := range hcs {
		for w := 0; w < cfg.writers; w++ {
			var own []int
			for k := w; k < cfg.keys; k += cfg.writers {
				own = append(own, k)
			}
			if len(own) == 0 {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				cms := hcs[h].kube.CoreV1().ConfigMaps(ns)
				seen := map[int]*corev1.ConfigMap{}
				for n := 0; wctx.Err() == nil; n++ {
					k := own[rand.IntN(len(own))]
					var got *corev1.ConfigMap
					var err error
					if prev := seen[k]; prev == nil {
						got, err = cms.Create(wctx, configMap(fmt.Sprintf("cm-%d", k), n), metav1.CreateOptions{})
					} else {
						next := prev.DeepCopy()
						next.Data["n"] = strconv.Itoa(n)
						got, err = cms.Update(wctx, next, metav1.UpdateOptions{})
					}
					if err != nil {
						if wctx.Err() == nil {
							wErrs.Add(1)
							seen[k] = nil
							if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
								if cur, gerr := cms.Get(wctx, fmt.Sprintf("cm-%d", k), metav1.GetOptions{}); gerr == nil {
									seen[k] = cur
								}
							}
						}
						continue
					}
					seen[k] = got
					cmOps.Add(1)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := hcs[h].dyn.Resource(widgetsGVR).Namespace(ns)
			seen := map[int]*unstructured.Unstructured{}
			for n := 0; wctx.Err() == nil; n++ {
				k := rand.IntN(cfg.keys)
				var got *unstructured.Unstructured
				var err error
				if prev := seen[k]; prev == nil {
					got, err = ws.Create(wctx, widget(fmt.Sprintf("w-%d", k), n), metav1.CreateOptions{})
				} else {
					next := prev.DeepCopy()
					_ = unstructured.SetNestedField(next.Object, int64(n), "spec", "size")
					got, err = ws.Update(wctx, next, metav1.UpdateOptions{})
				}
				if err != nil {
					if wctx.Err() == nil {
						wErrs.Add(1)
						seen[k] = nil
						if apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
							if cur, gerr := ws.Get(wctx, fmt.Sprintf("w-%d", k), metav1.GetOptions{}); gerr == nil {
								seen[k] = cur
							}
						}
					}
					continue
				}
				seen[k] = got
				crOps.Add(1)
			}
		}()
	}
	wg.Wait()
	wsecs := time.Since(began).Seconds()
	cancel()
	r.cmWrites = float64(cmOps.Load()) / wsecs
	r.crWrites = float64(crOps.Load()) / wsecs
	r.writes = r.cmWrites + r.crWrites
	r.writeErrs = wErrs.Load()

	// Read phase: 9 in 10 gets of one configmap, 1 in 10 lists of all.
	var rOps, rErrs atomic.Int64
	rctx, cancel := context.WithTimeout(ctx, cfg.duration)
	defer cancel()
	began = time.Now()
	for h := range hcs {
		for w := 0; w < cfg.writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cms := hcs[h].kube.CoreV1().ConfigMaps(ns)
				for rctx.Err() == nil {
					var err error
					if rand.IntN(10) == 0 {
						_, err = cms.List(rctx, metav1.ListOptions{})
					} else {
						_, err = cms.Get(rctx, fmt.Sprintf("cm-%d", rand.IntN(cfg.keys)), metav1.GetOptions{})
						if apierrors.IsNotFound(err) {
							err = nil // a key no writer reached in time: still a served read
						}
					}
					if err != nil {
						if rctx.Err() == nil {
							rErrs.Add(1)
						}
						continue
					}
					rOps.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	r.reads = float64(rOps.Load()) / time.Since(began).Seconds()
	r.readErrs = rErrs.Load()
	return r, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ---- scale phase ----

type scaleResult struct {
	activeMiB, rssGiB, coldP50 float64
	heavens, active            int
}

func scalePhase(cfg config) (scaleResult, error) {
	var res scaleResult
	stopped := cfg.scaleHeavens - cfg.scaleActive
	fmt.Printf("# scale (git): %d heavens created then idled out (idle timeout %s), %d kept active (idle timeout 1h)\n",
		stopped, cfg.shortIdle, cfg.scaleActive)
	dataDir, err := os.MkdirTemp("", "bench-server-scale-")
	if err != nil {
		return res, err
	}
	ctx := context.Background()

	// 1. Heavens that end up stopped: one configmap each, through a server
	// that evicts them after shortIdle.
	created := 0
	if stopped > 0 {
		bs, err := startServer(server.StorageGit, cfg.shortIdle, dataDir, true)
		if err != nil {
			return res, err
		}
		began := time.Now()
		n, errs := forEach(stopped, cfg.parallel, func(i int) error {
			kube, err := kubernetes.NewForConfig(bs.restConfig(stoppedName(i)))
			if err != nil {
				return err
			}
			_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, configMap("cm-0", i), metav1.CreateOptions{})
			return err
		}, func(done int) {
			fmt.Printf("# stopped heavens: %d/%d created (%.1f/s)\n", done, stopped, float64(done)/time.Since(began).Seconds())
		})
		created += n
		fmt.Printf("stopped_heavens_created=%d errors=%d seconds=%.1f\n", n, len(errs), time.Since(began).Seconds())
		printErrs(errs)
		bs.stop() // stops any heaven that has not idled out yet
		if n == 0 && len(errs) > 0 {
			return res, fmt.Errorf("no heaven could be created: %w", errs[0])
		}
	}

	// 2. Active heavens on a server that keeps them running.
	bs, err := startServer(server.StorageGit, time.Hour, dataDir, cfg.keep)
	if err != nil {
		return res, err
	}
	defer bs.remove()
	defer bs.stop()
	rssBefore := rss()
	memBefore := memStats()
	if cfg.heapProfile != "" {
		if err := writeHeapProfile(cfg.heapProfile + ".before"); err != nil {
			return res, err
		}
	}
	base, _ := bs.activeHeavens()
	goroutinesBefore := runtime.NumGoroutine()
	fmt.Printf("rss_before_mib=%.1f heap_mib=%.1f live_heap_mib=%.1f active_heavens_metric=%d goroutines=%d\n", rssBefore/(1<<20),
		float64(memBefore.HeapInuse)/(1<<20), float64(memBefore.HeapAlloc)/(1<<20), base, goroutinesBefore)
	began := time.Now()
	n, errs := forEach(cfg.scaleActive, cfg.parallel, func(i int) error {
		rc := bs.restConfig(activeName(i))
		if err := installCRD(ctx, rc); err != nil {
			return err
		}
		kube, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return err
		}
		for k := 0; k < 3; k++ {
			if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, configMap(fmt.Sprintf("cm-%d", k), k), metav1.CreateOptions{}); err != nil {
				return err
			}
		}
		dyn, err := dynamic.NewForConfig(rc)
		if err != nil {
			return err
		}
		_, err = dyn.Resource(widgetsGVR).Namespace(ns).Create(ctx, widget("w-0", i), metav1.CreateOptions{})
		return err
	}, func(done int) {
		fmt.Printf("# active heavens: %d/%d created (%.1f/s, rss %.0f MiB)\n", done, cfg.scaleActive, float64(done)/time.Since(began).Seconds(), rss()/(1<<20))
	})
	created += n
	fmt.Printf("active_heavens_created=%d errors=%d seconds=%.1f\n", n, len(errs), time.Since(began).Seconds())
	printErrs(errs)
	rssAfter := rss()
	memAfter := memStats()
	if cfg.heapProfile != "" {
		if err := writeHeapProfile(cfg.heapProfile); err != nil {
			return res, err
		}
	}
	metricActive, err := bs.activeHeavens()
	if err != nil {
		return res, err
	}
	// The metric counts root, which is always running.
	res.active = metricActive - 1
	if n > 0 {
		res.activeMiB = (rssAfter - rssBefore) / (1 << 20) / float64(n)
	}
	res.rssGiB = rssAfter / (1 << 30)
	res.heavens = created
	fmt.Printf("rss_after_mib=%.1f active_heavens_metric=%d (root included) goroutines_per_heaven=%.0f\n",
		rssAfter/(1<<20), metricActive, float64(runtime.NumGoroutine()-goroutinesBefore)/float64(max(n, 1)))
	perHeaven := func(after, before uint64) float64 {
		return (float64(after) - float64(before)) / (1 << 20) / float64(max(n, 1))
	}
	fmt.Printf("per active heaven: heap_mib=%.2f live_heap_mib=%.2f stack_mib=%.2f other_runtime_mib=%.2f\n",
		perHeaven(memAfter.HeapInuse, memBefore.HeapInuse), perHeaven(memAfter.HeapAlloc, memBefore.HeapAlloc),
		perHeaven(memAfter.StackInuse, memBefore.StackInuse),
		perHeaven(memAfter.Sys-memAfter.HeapSys-memAfter.StackSys, memBefore.Sys-memBefore.HeapSys-memBefore.StackSys))

	// 3. Cold starts: the first request to heavens that exist but have not
	// run in this server.
	var cold []float64
	for i := 0; i < cfg.coldStarts && i < stopped; i++ {
		kube, err := kubernetes.NewForConfig(bs.restConfig(stoppedName(i)))
		if err != nil {
			return res, err
		}
		t0 := time.Now()
		_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
		d := time.Since(t0)
		if err != nil {
			fmt.Printf("cold start %s: %v\n", stoppedName(i), err)
			continue
		}
		cold = append(cold, float64(d.Microseconds())/1000)
	}
	if len(cold) > 0 {
		res.coldP50 = median(cold)
		fmt.Printf("cold_starts=%d p50_ms=%.1f min_ms=%.1f max_ms=%.1f\n", len(cold), res.coldP50, slices.Min(cold), slices.Max(cold))
	}
	return res, nil
}

func stoppedName(i int) string { return fmt.Sprintf("idle-%05d", i) }
func activeName(i int) string  { return fmt.Sprintf("active-%05d", i) }

// forEach runs f(0..n-1) on parallel goroutines, reporting progress about
// every 10%; it returns how many succeeded and the errors.
func forEach(n, parallel int, f func(i int) error, progress func(done int)) (int, []error) {
	var next, ok atomic.Int64
	var mu sync.Mutex
	var errs []error
	step := int64(max(n/10, 1))
	var wg sync.WaitGroup
	for p := 0; p < parallel; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				if err := f(int(i)); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("#%d: %w", i, err))
					mu.Unlock()
					continue
				}
				if d := ok.Add(1); d%step == 0 {
					progress(int(d))
				}
			}
		}()
	}
	wg.Wait()
	return int(ok.Load()), errs
}

func printErrs(errs []error) {
	for i, err := range errs {
		if i == 5 {
			fmt.Printf("  ... and %d more errors\n", len(errs)-5)
			return
		}
		fmt.Println("  error:", err)
	}
}

// rss is the process's resident set size in bytes, after returning what
// the Go heap can to the OS.
func rss() float64 {
	runtime.GC()
	debug.FreeOSMemory()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// memStats reads the runtime's memory statistics after a collection (rss
// has just run one).
func memStats() runtime.MemStats {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// writeHeapProfile writes the live heap, after a collection, to path, and
// the goroutines beside it.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The goroutines, counted by stack: each costs at least a stack page.
	g, err := os.Create(path + ".goroutines")
	if err != nil {
		return err
	}
	if err := pprof.Lookup("goroutine").WriteTo(g, 1); err != nil {
		g.Close()
		return err
	}
	return g.Close()
}
