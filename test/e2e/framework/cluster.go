// Package framework starts physical Kubernetes clusters for the end-to-end
// tests: by default a real kube-apiserver and kube-controller-manager on an
// embedded etcd, run as subprocesses of the test (E2E_PROVIDER=local), or
// kind clusters (E2E_PROVIDER=kind). Both give the same Cluster. It also
// runs heaven-server in the test process (HeavenServer): the one way the
// e2e and integration tests and the benchmarks start it.
//
// A local cluster has no nodes: objects are stored and controllers reconcile
// them (a Deployment gets its ReplicaSet and Pods), but Pods stay Pending.
// Its kube-apiserver can be stopped and started again on the same port and
// data (APIServerOutage), as heaven-server can (HeavenServer.Outage).
//
// StartCluster and StartHeavenServer are for tests; NewCluster and
// NewHeavenServer are the same outside of tests (benchmarks).
package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// startTimeout bounds StartClusters: every cluster ready, kind ones included.
const startTimeout = 5 * time.Minute

// Cluster is a running physical cluster. Stop it with Stop; StartCluster
// also stops it when the test ends.
type Cluster struct {
	// Name is the name the test gave the cluster.
	Name string
	// Kubeconfig is the path of a kubeconfig file with admin
	// (system:masters) credentials as its current context.
	Kubeconfig string

	config  *rest.Config
	logs    []string      // log files of the cluster's processes, shown when the test fails
	startup time.Duration // from the start to a cluster ready for clients
	phases  string        // how the startup time was spent

	stopOnce sync.Once
	stopErr  error
	stop     func() error
	// apiServer stops and starts the API server alone; nil when the
	// provider cannot.
	apiServer apiServerControl
}

// apiServerControl stops and starts a cluster's API server while the rest
// of the cluster (its storage, its controllers) goes on running.
type apiServerControl interface {
	stopAPIServer() error
	startAPIServerAgain(ctx context.Context) error
}

// ErrNoAPIServerRestart is returned by StopAPIServer and StartAPIServer
// for clusters whose provider cannot stop the API server alone (kind).
var ErrNoAPIServerRestart = errors.New("the provider cannot stop and start the API server alone")

// StopAPIServer stops the cluster's kube-apiserver (SIGTERM, then SIGKILL
// after a grace period): clients get connection refused until
// StartAPIServer. The cluster's etcd and kube-controller-manager go on
// running. It returns an error if kube-apiserver was not running, had
// exited, or had to be killed.
func (c *Cluster) StopAPIServer() error {
	if c.apiServer == nil {
		return ErrNoAPIServerRestart
	}
	return c.apiServer.stopAPIServer()
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the
// same port, etcd and certificates (the kubeconfig stays valid), and waits
// until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	if c.apiServer == nil {
		return ErrNoAPIServerRestart
	}
	return c.apiServer.startAPIServerAgain(ctx)
}

// APIServerOutage stops kube-apiserver, runs during (the outage: the test
// changes things meanwhile), and starts kube-apiserver again. The test
// fails if a step does; it is skipped if the provider cannot stop the API
// server alone.
func (c *Cluster) APIServerOutage(t testing.TB, during func()) {
	t.Helper()
	began := time.Now()
	if err := c.StopAPIServer(); errors.Is(err, ErrNoAPIServerRestart) {
		t.Skipf("cluster %s: %v", c.Name, err)
	} else if err != nil {
		t.Fatalf("cluster %s: stopping kube-apiserver: %v", c.Name, err)
	}
	t.Logf("cluster %s: kube-apiserver stopped in %v", c.Name, time.Since(began).Round(time.Millisecond))
	during()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatalf("cluster %s: starting kube-apiserver again: %v", c.Name, err)
	}
	t.Logf("cluster %s: kube-apiserver was down for %v", c.Name, time.Since(began).Round(time.Millisecond))
}

// LogFiles are the log files of the cluster's processes.
func (c *Cluster) LogFiles() []string { return append([]string(nil), c.logs...) }

// RESTConfig returns a copy of the admin's client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.config) }

// Client returns an admin clientset.
func (c *Cluster) Client() kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(c.RESTConfig())
}

// Stop stops the cluster and waits until nothing of it runs any more. It
// returns an error if a process of the cluster had exited before Stop or did
// not stop in time. Calling it again returns the first result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.stop != nil {
			c.stopErr = c.stop()
		}
	})
	return c.stopErr
}

// loadConfig reads the admin's configuration from c.Kubeconfig.
func (c *Cluster) loadConfig() error {
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", c.Kubeconfig, err)
	}
	config.QPS, config.Burst = 100, 200
	c.config = config
	return nil
}

// A provider starts clusters of one kind.
type provider interface {
	// check returns a *missingError when something the provider needs is
	// not there.
	check() error
	// start starts cluster name with its files in dir. It returns a
	// Cluster whose Stop releases whatever was started, even with an error.
	start(ctx context.Context, name, dir string) (*Cluster, error)
}

// missingError says that a prerequisite of the tests is missing and how to
// get it: the test is skipped, or fails when CI=true.
type missingError struct{ msg string }

func (e *missingError) Error() string { return e.msg }

// providerFromEnv returns the provider E2E_PROVIDER names (local by default).
func providerFromEnv() (provider, error) {
	switch p := os.Getenv("E2E_PROVIDER"); p {
	case "", "local":
		return &localProvider{}, nil
	case "kind":
		return &kindProvider{}, nil
	default:
		return nil, fmt.Errorf("E2E_PROVIDER=%q: want local or kind", p)
	}
}

// NewCluster starts a cluster outside of a test (a benchmark), of the
// provider E2E_PROVIDER names, with its files in dir, and returns it once it
// is ready. The caller stops it with Stop, also after an error if the
// returned Cluster is not nil.
func NewCluster(ctx context.Context, name, dir string) (*Cluster, error) {
	p, err := providerFromEnv()
	if err != nil {
		return nil, err
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c, err := p.start(ctx, name, dir)
	if err != nil {
		return c, fmt.Errorf("cluster %s: %w", name, err)
	}
	return c, nil
}

// StartCluster starts one cluster; see StartClusters.
func StartCluster(t testing.TB, name string) *Cluster {
	t.Helper()
	return StartClusters(t, name)[0]
}

// StartClusters starts a cluster per name, all at once, and returns them in
// the order of names once every one is ready. The clusters are stopped when
// the test ends, and the logs of their processes are shown if it failed. If a
// binary or tool is missing, the test is skipped with a message saying how to
// get it, or fails when CI=true.
func StartClusters(t testing.TB, names ...string) []*Cluster {
	t.Helper()
	p, err := providerFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.check(); err != nil {
		skipOrFail(t, err)
	}
	dirs := make([]string, len(names))
	for i := range names {
		dirs[i] = t.TempDir()
	}

	clusters := make([]*Cluster, len(names))
	errs := make([]error, len(names))
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			c, err := p.start(ctx, name, dirs[i])
			if err != nil {
				err = fmt.Errorf("cluster %s: %w", name, err)
			}
			clusters[i], errs[i] = c, err
		})
	}
	wg.Wait()

	for i, c := range clusters {
		if c == nil {
			continue
		}
		stopOnCleanup(t, c)
		if errs[i] == nil {
			t.Logf("cluster %s ready in %v (%s)", c.Name, c.startup.Round(time.Millisecond), c.phases)
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return clusters
}

// StartKubeAPIServer runs a stock kube-apiserver alone (no controllers) for
// a test, with etcdArgs as its etcd flags (--etcd-servers and the rest): a
// kube-apiserver on a heaven's branch, through heaven-server's etcd API. It
// is stopped when the test ends. Local clusters only.
func StartKubeAPIServer(t testing.TB, name string, etcdArgs ...string) *Cluster {
	t.Helper()
	p := &localProvider{}
	var err error
	if p.apiServer, err = kubeAPIServer.path(); err != nil {
		skipOrFail(t, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	c, err := p.startAPIServerOnly(ctx, name, t.TempDir(), etcdArgs)
	if c != nil {
		stopOnCleanup(t, c)
	}
	if err != nil {
		t.Fatalf("kube-apiserver %s: %v", name, err)
	}
	t.Logf("kube-apiserver %s ready in %v", name, c.startup.Round(time.Millisecond))
	return c
}

// stopOnCleanup stops c when the test ends, and shows the logs of its
// processes if the test failed or c did not stop cleanly.
func stopOnCleanup(t testing.TB, c *Cluster) {
	t.Cleanup(func() {
		began := time.Now()
		stopErr := c.Stop()
		t.Logf("cluster %s stopped in %v", c.Name, time.Since(began).Round(time.Millisecond))
		if t.Failed() || stopErr != nil {
			for _, log := range c.logs {
				if _, err := os.Stat(log); err == nil {
					t.Logf("%s", tail(log, 32<<10))
				}
			}
		}
		if stopErr != nil {
			t.Errorf("cluster %s: %v", c.Name, stopErr)
		}
	})
}

// skipOrFail skips the test for a missing prerequisite, or fails it under CI
// (CI=true), where a skipped e2e suite would pass unnoticed.
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	var missing *missingError
	if os.Getenv("CI") == "true" || !errors.As(err, &missing) {
		t.Fatal(err)
	}
	t.Skip(err)
}

// tail returns the end of the file at path, at most max bytes, with a header
// naming the file.
func tail(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "==== %s", path)
	if info, err := f.Stat(); err == nil && info.Size() > max {
		fmt.Fprintf(&b, " (last %d of %d bytes)", max, info.Size())
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	b.WriteString(" ====\n")
	data, _ := io.ReadAll(io.LimitReader(f, max))
	b.Write(data)
	return b.String()
}
