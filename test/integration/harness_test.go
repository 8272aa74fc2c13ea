// Package integration drives a real heaven-server, started in the test
// process, with client-go and with the real kubectl (built by `make tools`).
package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
)

// testServer is a heaven-server running in the test process.
type testServer struct {
	t       *testing.T
	dataDir string
	url     string
	cancel  context.CancelFunc
	done    chan error
}

// startServer runs heaven-server on a free port with its data in dataDir
// (a new temporary directory if empty); the test stops it at cleanup.
func startServer(t *testing.T, dataDir string, configure func(*server.Options)) *testServer {
	t.Helper()
	if dataDir == "" {
		dataDir = t.TempDir()
	}
	o := server.NewOptions()
	o.DataDir = dataDir
	o.SecurePort = 0
	if configure != nil {
		configure(o)
	}
	require.Empty(t, o.Validate())
	cfg, err := o.Config()
	require.NoError(t, err)
	s, err := cfg.Complete().New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{t: t, dataDir: dataDir, url: s.URL(), cancel: cancel, done: make(chan error, 1)}
	go func() { ts.done <- s.Run(ctx) }()
	t.Cleanup(ts.stop)
	// Ready when the root heaven answers (its Heaven CRD is installed).
	dyn := ts.dynamic("root")
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(heavensGVR).List(ctx, listOptions())
		return err == nil, nil
	})
	require.NoError(t, err, "root heaven not serving Heaven objects")
	return ts
}

func (ts *testServer) stop() {
	if ts.cancel == nil {
		return
	}
	ts.cancel()
	ts.cancel = nil
	select {
	case err := <-ts.done:
		require.NoError(ts.t, err)
	case <-time.After(60 * time.Second):
		ts.t.Error("heaven-server did not stop within 60s")
	}
}

func (ts *testServer) kubeconfig() string { return filepath.Join(ts.dataDir, "admin.kubeconfig") }

// restConfig is the admin's config for heaven name.
func (ts *testServer) restConfig(name string) *rest.Config {
	ts.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(ts.url+server.ClustersPrefix+name, ts.kubeconfig())
	require.NoError(ts.t, err)
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

func (ts *testServer) kube(name string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(ts.restConfig(name))
}

func (ts *testServer) dynamic(name string) dynamic.Interface {
	return dynamic.NewForConfigOrDie(ts.restConfig(name))
}

// kubectlPath is the kubectl `make tools` builds.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KUBECTL"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", ".cache", "bin", "kubectl")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("kubectl not found at %s: run `make tools` (or set KUBECTL)", p)
	}
	return p
}

// kubectl runs the real kubectl against heaven name with stdin, returning
// its output; the test fails if it fails.
func (ts *testServer) kubectl(name, stdin string, args ...string) string {
	ts.t.Helper()
	out, err := ts.kubectlErr(name, stdin, args...)
	require.NoError(ts.t, err, "kubectl %s: %s", strings.Join(args, " "), out)
	return out
}

func (ts *testServer) kubectlErr(name, stdin string, args ...string) (string, error) {
	ts.t.Helper()
	cmd := ts.kubectlCmd(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (ts *testServer) kubectlCmd(name string, args ...string) *exec.Cmd {
	all := append([]string{"--server", ts.url + server.ClustersPrefix + name, "--request-timeout", "60s"}, args...)
	cmd := exec.Command(kubectlPath(ts.t), all...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+ts.kubeconfig(), "HOME="+ts.t.TempDir())
	return cmd
}

// git runs the git CLI on the server's repository.
func (ts *testServer) git(args ...string) string {
	ts.t.Helper()
	cmd := exec.Command("git", append([]string{"--git-dir", filepath.Join(ts.dataDir, "heavens.git")}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(ts.t, err, "git %v: %s", args, out)
	return string(out)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
	}
}

var heavensGVR = v1alpha1.HeavensResource

func listOptions() metav1.ListOptions { return metav1.ListOptions{} }

var _ = fmt.Sprintf
