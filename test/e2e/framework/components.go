package framework

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// RunKubeControllerManager runs the real kube-controller-manager against
// a heaven of h, as against a kube-apiserver: every controller on by default,
// no leader election (one instance), no serving port. It stops when the
// test ends, or when stopped; its log is in the test's temporary
// directory, and its end is shown if the test fails.
func (h *HeavenServer) RunKubeControllerManager(t testing.TB, heaven string, args ...string) *Component {
	t.Helper()
	return runComponent(t, kubeControllerManager, h.kubeconfigFile(t, heaven), append([]string{
		"--controllers=*",
		"--leader-elect=false",
		"--secure-port=0",
		// Building the controllers takes about 100 requests: at the
		// default 20 per second that is seconds of client-side throttling.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--v=1",
	}, args...))
}

// RunKubeScheduler runs the real kube-scheduler against a heaven of h, as
// RunKubeControllerManager runs kube-controller-manager.
func (h *HeavenServer) RunKubeScheduler(t testing.TB, heaven string, args ...string) *Component {
	t.Helper()
	return runKubeScheduler(t, h.kubeconfigFile(t, heaven), args)
}

// RunKubeScheduler runs the real kube-scheduler against c, as
// HeavenServer.RunKubeScheduler does against a heaven.
func (c *Cluster) RunKubeScheduler(t testing.TB, args ...string) *Component {
	t.Helper()
	return runKubeScheduler(t, c.Kubeconfig, args)
}

func runKubeScheduler(t testing.TB, kubeconfig string, args []string) *Component {
	t.Helper()
	return runComponent(t, kubeScheduler, kubeconfig, append([]string{
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--v=1",
	}, args...))
}

// KwokNodeAnnotation marks the nodes RunKwok manages.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// RunKwok runs kwok against a heaven of h: the agent of the nodes annotated
// KwokNodeAnnotation=fake, which reports them ready and runs (and removes)
// their pods as a kubelet would, without containers. Its stages are the
// file `make kwok` writes next to it.
func (h *HeavenServer) RunKwok(t testing.TB, heaven string, args ...string) *Component {
	t.Helper()
	return runKwok(t, h.kubeconfigFile(t, heaven), args)
}

// RunKwok runs kwok against c, as HeavenServer.RunKwok does against a
// heaven.
func (c *Cluster) RunKwok(t testing.TB, args ...string) *Component {
	t.Helper()
	return runKwok(t, c.Kubeconfig, args)
}

func runKwok(t testing.TB, kubeconfig string, args []string) *Component {
	t.Helper()
	bin, err := kwok.path()
	if err != nil {
		skipOrFail(t, err)
	}
	return runComponent(t, kwok, kubeconfig, append([]string{
		"--config=" + bin + "-stages.yaml",
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		"--cidr=10.244.0.0/16",
		"--node-ip=10.244.0.1",
	}, args...))
}

// kubeconfigFile writes a kubeconfig of heaven into a directory of the
// test and returns its path.
func (h *HeavenServer) kubeconfigFile(t testing.TB, heaven string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), heaven+".kubeconfig")
	if err := h.WriteKubeconfig(heaven, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Component is a process started by RunKubeControllerManager,
// RunKubeScheduler or RunKwok.
type Component struct {
	p    *process
	once sync.Once
	err  error
}

// Stop stops the component before the test ends (SIGTERM, then a kill after
// a grace period). It returns an error if the component had exited before
// or had to be killed; later calls return the same.
func (c *Component) Stop() error {
	c.once.Do(func() { c.err = c.p.stop() })
	return c.err
}

// runComponent runs binary b against the API server of kubeconfig until
// the test ends or the returned Component is stopped.
func runComponent(t testing.TB, b binary, kubeconfig string, args []string) *Component {
	t.Helper()
	bin, err := b.path()
	if err != nil {
		skipOrFail(t, err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, b.name+".log")
	p, err := startProcess(b.name, bin, log, append([]string{"--kubeconfig=" + kubeconfig}, args...))
	if err != nil {
		t.Fatal(err)
	}
	c := &Component{p: p}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(tail(log, 8<<10))
		}
		if err := c.Stop(); err != nil {
			t.Errorf("%s: %v", b.name, fmt.Errorf("stopping: %w", err))
		}
	})
	return c
}
