package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
)

const (
	// heavenReadyTimeout bounds a start of heaven-server: listening, and
	// the root heaven serving Heaven objects.
	heavenReadyTimeout = time.Minute
	// heavenStopTimeout bounds a stop: heaven-server's shutdown timeout
	// (set to less by NewHeavenServer) and a margin.
	heavenStopTimeout = time.Minute
	// heavenShutdownTimeout is the --shutdown-timeout of the servers
	// started here, unless configure sets another: long watches (a
	// syncer's) would keep the default 30s shutdown waiting.
	heavenShutdownTimeout = 5 * time.Second
)

// HeavenServer is a heaven-server running in this process (as
// cmd/heaven-server runs it: Options → Config → Complete → New → Run). It
// can be stopped and started again on the same data directory and port, so
// that clients (a syncer) find it where it was.
type HeavenServer struct {
	// DataDir is the server's --data-dir.
	DataDir string

	options *server.Options // of the first start; the port is then fixed
	url     string
	admin   *rest.Config // the admin's credentials, for the root heaven

	// etcdAPI and ephemeralEtcd are the server's etcd endpoints (see
	// EtcdAPIURLs and EphemeralEtcdURLs).
	etcdAPI, ephemeralEtcd []string

	mu     sync.Mutex // guards server, cancel and done
	server *server.Server
	cancel context.CancelFunc
	done   chan error // Run's result; nil while stopped
}

// NewHeavenServer starts heaven-server with its data in dataDir on a free
// loopback port, outside of a test (a benchmark); configure (may be nil)
// changes the options first, the data directory too. It returns once the
// root heaven serves Heaven objects. The caller stops it with Stop, also
// after an error.
func NewHeavenServer(ctx context.Context, dataDir string, configure func(*server.Options)) (*HeavenServer, error) {
	o := server.NewOptions()
	o.DataDir = dataDir
	o.SecurePort = 0
	o.ShutdownTimeout = heavenShutdownTimeout
	if configure != nil {
		configure(o)
	}
	h := &HeavenServer{DataDir: o.DataDir, options: o}
	return h, h.Start(ctx)
}

// StartHeavenServer starts heaven-server for a test, with its data in a
// temporary directory unless configure sets o.DataDir (see
// NewHeavenServer). It is stopped when the test ends; the test fails if it
// does not stop cleanly.
func StartHeavenServer(t testing.TB, configure func(*server.Options)) *HeavenServer {
	t.Helper()
	began := time.Now()
	h, err := NewHeavenServer(t.Context(), t.TempDir(), configure)
	t.Cleanup(func() {
		began := time.Now()
		if err := h.Stop(); err != nil && !errors.Is(err, errHeavenStopped) {
			t.Errorf("heaven-server: %v", err)
		}
		t.Logf("heaven-server stopped in %v", time.Since(began).Round(time.Millisecond))
	})
	if err != nil {
		t.Fatalf("heaven-server: %v", err)
	}
	t.Logf("heaven-server ready in %v", time.Since(began).Round(time.Millisecond))
	return h
}

var errHeavenStopped = errors.New("heaven-server is not running")

// Start starts heaven-server again after Stop, on the same data directory
// and port, and waits until the root heaven serves Heaven objects.
func (h *HeavenServer) Start(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done != nil {
		return errors.New("heaven-server is running")
	}
	if errs := h.options.Validate(); len(errs) > 0 {
		return errors.Join(errs...)
	}
	cfg, err := h.options.Config()
	if err != nil {
		return err
	}
	s, err := cfg.Complete().New()
	if err != nil {
		return err
	}
	if h.url == "" {
		// Later starts listen on the port of the first one.
		h.url = s.URL()
		if h.options.SecurePort, err = portOf(h.url); err != nil {
			return err
		}
		if h.admin, err = clientcmd.BuildConfigFromFlags(h.url+server.ClustersPrefix+server.RootHeaven, s.KubeconfigPath()); err != nil {
			return err
		}
		h.admin.QPS, h.admin.Burst = 200, 400
	}
	h.etcdAPI, h.ephemeralEtcd = s.EtcdAPIURLs(), s.EphemeralEtcdURLs()
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	h.server, h.cancel, h.done = s, cancel, done

	dyn, err := dynamic.NewForConfig(h.RESTConfig(server.RootHeaven))
	if err != nil {
		return err
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, heavenReadyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-done:
			done <- err // for Stop
			return false, fmt.Errorf("heaven-server stopped: %v", err)
		default:
		}
		_, last = dyn.Resource(v1alpha1.HeavensResource).List(ctx, metav1.ListOptions{})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the root heaven does not serve Heaven objects: %w (last error: %v)", err, last)
	}
	return nil
}

// Stop stops heaven-server and waits until Run returned. Its data and
// port stay for Start.
func (h *HeavenServer) Stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done == nil {
		return errHeavenStopped
	}
	h.cancel()
	done := h.done
	h.server, h.cancel, h.done = nil, nil, nil
	select {
	case err := <-done:
		return err
	case <-time.After(heavenStopTimeout):
		return fmt.Errorf("heaven-server did not stop within %v", heavenStopTimeout)
	}
}

// Outage stops heaven-server, runs during (the test changes things
// meanwhile), and starts heaven-server again on the same data and port.
// The test fails if a step does.
func (h *HeavenServer) Outage(t testing.TB, during func()) {
	t.Helper()
	began := time.Now()
	if err := h.Stop(); err != nil {
		t.Fatalf("stopping heaven-server: %v", err)
	}
	t.Logf("heaven-server stopped in %v", time.Since(began).Round(time.Millisecond))
	during()
	if err := h.Start(t.Context()); err != nil {
		t.Fatalf("starting heaven-server again: %v", err)
	}
	t.Logf("heaven-server was down for %v", time.Since(began).Round(time.Millisecond))
}

// URL is the server's base URL, e.g. https://127.0.0.1:41234; it stays
// the same across restarts.
func (h *HeavenServer) URL() string { return h.url }

// AdminKubeconfig is the admin kubeconfig heaven-server writes (its
// contexts name the root heaven).
func (h *HeavenServer) AdminKubeconfig() string { return filepath.Join(h.DataDir, "admin.kubeconfig") }

// HeavenURL is the URL of heaven: <URL>/clusters/<heaven>.
func (h *HeavenServer) HeavenURL(heaven string) string { return h.url + server.ClustersPrefix + heaven }

// RESTConfig is the admin's client configuration for heaven.
func (h *HeavenServer) RESTConfig(heaven string) *rest.Config {
	cfg := rest.CopyConfig(h.admin)
	cfg.Host = h.HeavenURL(heaven)
	return cfg
}

// Kube is an admin clientset for heaven.
func (h *HeavenServer) Kube(heaven string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(h.RESTConfig(heaven))
}

// Dynamic is an admin dynamic client for heaven.
func (h *HeavenServer) Dynamic(heaven string) dynamic.Interface {
	return dynamic.NewForConfigOrDie(h.RESTConfig(heaven))
}

// CRDs is an admin client of heaven's CustomResourceDefinitions.
func (h *HeavenServer) CRDs(heaven string) apiextensionsclient.Interface {
	return apiextensionsclient.NewForConfigOrDie(h.RESTConfig(heaven))
}

// EtcdAPIURLs are where the server serves its repository over the etcd
// API (server.Options.EtcdAPIURLs), as of its last start.
func (h *HeavenServer) EtcdAPIURLs() []string { return h.etcdAPI }

// EphemeralEtcdURLs are the endpoints of the server's etcd of ephemeral
// resources, as of its last start.
func (h *HeavenServer) EphemeralEtcdURLs() []string { return h.ephemeralEtcd }

// RepositoryPath is the server's bare git repository, one branch per
// heaven.
func (h *HeavenServer) RepositoryPath() string { return filepath.Join(h.DataDir, "heavens.git") }

// Git runs the git CLI on the server's repository and returns its output;
// the test fails if git does (or, for the *assert.CollectT of an
// EventuallyWithT, that check). A running server first writes what it
// holds in memory, so git sees every write acknowledged so far and no ref
// is kept locked by the store (see gitrepo's held commits).
func (h *HeavenServer) Git(t require.TestingT, args ...string) string {
	if th, ok := t.(interface{ Helper() }); ok {
		th.Helper()
	}
	require.NoError(t, h.FlushGit(), "writing held commits before git runs")
	return Git(t, append([]string{"--git-dir", h.RepositoryPath()}, args...)...)
}

// FlushGit has a running server write the commits it holds in memory into
// the repository's files (server.Server.FlushGit); stopped, it has none.
func (h *HeavenServer) FlushGit() error {
	h.mu.Lock()
	s := h.server
	h.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.FlushGit()
}

// Kubectl runs the real kubectl against heaven as the admin, stdin on its
// standard input, and returns its output (standard output and error); the
// test fails if kubectl does. heaven-server needs nothing else to run, so a
// missing kubectl fails the test rather than skipping it.
func (h *HeavenServer) Kubectl(t testing.TB, heaven, stdin string, args ...string) string {
	t.Helper()
	out, err := h.KubectlErr(t, heaven, stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// KubectlErr is Kubectl for a command that may fail: it returns kubectl's
// error with its output.
func (h *HeavenServer) KubectlErr(t testing.TB, heaven, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := h.KubectlCmd(t, heaven, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// KubectlCmd is the command that runs the real kubectl against heaven as
// the admin, for a test that drives the process itself (a watch, an
// editor in the environment).
func (h *HeavenServer) KubectlCmd(t testing.TB, heaven string, args ...string) *exec.Cmd {
	t.Helper()
	bin, err := kubectl.path()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--server", h.HeavenURL(heaven), "--request-timeout", "60s"}, args...)
	cmd := exec.CommandContext(t.Context(), bin, all...)
	// HOME: kubectl's discovery cache, one per command.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+h.AdminKubeconfig(), "HOME="+t.TempDir())
	return cmd
}

// WriteKubeconfig writes a kubeconfig for heaven with the admin's
// credentials to path, every cluster of it pointing at /clusters/<heaven>
// (a syncer's --upstream-kubeconfig).
func (h *HeavenServer) WriteKubeconfig(heaven, path string) error {
	cfg, err := clientcmd.LoadFromFile(h.AdminKubeconfig())
	if err != nil {
		return err
	}
	for _, c := range cfg.Clusters {
		c.Server = h.HeavenURL(heaven)
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// portOf is the port of URL u.
func portOf(u string) (int, error) {
	parsed, err := url.Parse(u)
	if err != nil {
		return 0, err
	}
	port, err := strconv.Atoi(parsed.Port())
	if err != nil {
		return 0, fmt.Errorf("no port in %q", u)
	}
	return port, nil
}

// Git runs the git CLI, ignoring the machine's and the user's git
// configuration, and returns its output; the test (or the check of an
// EventuallyWithT) fails if git does.
func Git(t require.TestingT, args ...string) string {
	if th, ok := t.(interface{ Helper() }); ok {
		th.Helper()
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}
