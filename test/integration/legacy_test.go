package integration

import (
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// The helpers these tests had before they moved onto the e2e framework,
// kept for tests written against them meanwhile. They are the framework's
// (startServer is framework.StartHeavenServer, eventually is
// require.EventuallyWithT); new tests use those directly, and this file
// goes once nothing calls it.

// testServer is a heaven-server started by framework.StartHeavenServer.
//
// Deprecated: use *framework.HeavenServer.
type testServer struct {
	*framework.HeavenServer
	t       *testing.T
	dataDir string
	url     string
}

// startServer starts heaven-server with its data in dataDir (a temporary
// directory if empty).
//
// Deprecated: use framework.StartHeavenServer (configure sets o.DataDir).
func startServer(t *testing.T, dataDir string, configure func(*server.Options)) *testServer {
	t.Helper()
	hs := framework.StartHeavenServer(t, func(o *server.Options) {
		if dataDir != "" {
			o.DataDir = dataDir
		}
		if configure != nil {
			configure(o)
		}
	})
	return &testServer{HeavenServer: hs, t: t, dataDir: hs.DataDir, url: hs.URL()}
}

// stop stops the server; the test fails if it does not stop cleanly.
//
// Deprecated: use HeavenServer.Stop.
func (ts *testServer) stop() {
	ts.t.Helper()
	require.NoError(ts.t, ts.Stop())
}

// Deprecated: use HeavenServer.AdminKubeconfig.
func (ts *testServer) kubeconfig() string { return ts.AdminKubeconfig() }

// Deprecated: use HeavenServer.RESTConfig.
func (ts *testServer) restConfig(name string) *rest.Config { return ts.RESTConfig(name) }

// Deprecated: use HeavenServer.Kube.
func (ts *testServer) kube(name string) kubernetes.Interface { return ts.Kube(name) }

// Deprecated: use HeavenServer.Dynamic.
func (ts *testServer) dynamic(name string) dynamic.Interface { return ts.Dynamic(name) }

// Deprecated: use HeavenServer.Kubectl.
func (ts *testServer) kubectl(name, stdin string, args ...string) string {
	ts.t.Helper()
	return ts.Kubectl(ts.t, name, stdin, args...)
}

// Deprecated: use HeavenServer.KubectlErr.
func (ts *testServer) kubectlErr(name, stdin string, args ...string) (string, error) {
	ts.t.Helper()
	return ts.KubectlErr(ts.t, name, stdin, args...)
}

// Deprecated: use HeavenServer.KubectlCmd.
func (ts *testServer) kubectlCmd(name string, args ...string) *exec.Cmd {
	ts.t.Helper()
	return ts.KubectlCmd(ts.t, name, args...)
}

// Deprecated: use HeavenServer.Git.
func (ts *testServer) git(args ...string) string {
	ts.t.Helper()
	return ts.Git(ts.t, args...)
}

// Deprecated: use scopedConfig.
func (ts *testServer) scopedConfig(heaven, user string, groups ...string) *rest.Config {
	ts.t.Helper()
	return scopedConfig(ts.t, ts.HeavenServer, heaven, user, groups...)
}

// eventually waits until cond holds, failing the test after timeout with
// cond's last error.
//
// Deprecated: use require.EventuallyWithT with assertions that say what
// is missing.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ok, err := cond()
		require.NoError(c, err)
		assert.True(c, ok, what)
	}, timeout, tick, what)
}

// Deprecated: use adminHTTP.
func rest2http(ts *testServer) (*http.Client, error) {
	return rest.HTTPClientFor(ts.RESTConfig(server.RootHeaven))
}

// kubectlPath is the real kubectl.
//
// Deprecated: use framework.KubectlPath, or HeavenServer.KubectlCmd.
func kubectlPath(t *testing.T) string { return framework.KubectlPath(t) }

// Deprecated: use v1alpha1.HeavensResource.
var heavensGVR = v1alpha1.HeavensResource

// Deprecated: use metav1.ListOptions{}.
func listOptions() metav1.ListOptions { return metav1.ListOptions{} }

// Deprecated: use labels.Everything.
func everything() labels.Selector { return labels.Everything() }
