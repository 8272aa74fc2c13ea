//go:build unix

package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
)

// The headless-cluster scenario: two heaven-servers with their own data,
// coordinating only through a git server on loopback. Heaven "shared"
// tracks the same remote branch on both; what either side creates appears
// on the other, through an outage of the git server too.
func TestRemoteTwoServersConvergeThroughGitDaemon(t *testing.T) {
	base := t.TempDir()
	remoteGit(t, "init", "-q", "--bare", filepath.Join(base, "heavens.git"))
	daemon := startGitDaemon(t, base)
	url := "git://" + daemon.addr + "/heavens.git"
	remote := map[string]any{"url": url, "interval": "1s"}

	a := startRemoteServer(t, "a")
	a.createHeaven(map[string]any{"remote": remote})
	a.waitRemoteSynced("the first server pushes its heaven")

	b := startRemoteServer(t, "b")
	b.createHeaven(map[string]any{"remote": remote})
	b.waitRemoteSynced("the second server starts from the remote branch")
	uid := func(s *remoteServer) string {
		ns, err := s.kube.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{})
		require.NoError(t, err)
		return string(ns.UID)
	}
	assert.Equal(t, uid(a), uid(b), "b's heaven is a clone of a's: the same namespace, not one of its own")

	// Objects created on each side appear on the other.
	for i := range 3 {
		a.createConfigMap(fmt.Sprintf("from-a-%d", i), map[string]string{"n": fmt.Sprint(i)})
		b.createConfigMap(fmt.Sprintf("from-b-%d", i), map[string]string{"n": fmt.Sprint(i)})
	}
	a.createConfigMap("both", map[string]string{"base": "1"})
	want := map[string]map[string]string{"both": {"base": "1"}}
	for i := range 3 {
		want[fmt.Sprintf("from-a-%d", i)] = map[string]string{"n": fmt.Sprint(i)}
		want[fmt.Sprintf("from-b-%d", i)] = map[string]string{"n": fmt.Sprint(i)}
	}
	waitConfigMaps(t, "objects of both sides on both", want, a, b)

	// The git server goes away for a while; both sides keep writing,
	// including different fields of one object.
	daemon.stop()
	outage := time.Now()
	a.patchConfigMap("both", `{"data":{"from-a":"x"}}`)
	b.patchConfigMap("both", `{"data":{"from-b":"y"}}`)
	for i := 3; i < 8; i++ {
		a.createConfigMap(fmt.Sprintf("from-a-%d", i), map[string]string{"n": fmt.Sprint(i)})
		b.createConfigMap(fmt.Sprintf("from-b-%d", i), map[string]string{"n": fmt.Sprint(i)})
		want[fmt.Sprintf("from-a-%d", i)] = map[string]string{"n": fmt.Sprint(i)}
		want[fmt.Sprintf("from-b-%d", i)] = map[string]string{"n": fmt.Sprint(i)}
		time.Sleep(time.Second)
	}
	want["both"] = map[string]string{"base": "1", "from-a": "x", "from-b": "y"}
	for _, s := range []*remoteServer{a, b} {
		s.waitRemoteCondition("the outage is reported", metav1.ConditionFalse, v1alpha1.ReasonRemoteUnreachable)
		_, err := s.kube.CoreV1().ConfigMaps("default").Get(t.Context(), "from-"+s.name+"-7", metav1.GetOptions{})
		require.NoError(t, err, "a heaven keeps working without its remote")
	}
	time.Sleep(time.Until(outage.Add(10 * time.Second)))

	daemon.start()
	back := time.Now()
	waitConfigMaps(t, "both sides caught up after the outage", want, a, b)
	t.Logf("converged %s after the git server came back", time.Since(back).Round(time.Millisecond))
	a.waitRemoteSynced("a reports the remote synced again")
	b.waitRemoteSynced("b reports the remote synced again")
	assert.Equal(t, a.configMaps(t.Context()), b.configMaps(t.Context()), "nothing lost, nothing different")

	// Converged servers leave the branches alone: no merge commits sent
	// back and forth.
	heads := func() []string {
		var out []string
		for _, dir := range []string{filepath.Join(a.dataDir, "heavens.git"), filepath.Join(b.dataDir, "heavens.git"), filepath.Join(base, "heavens.git")} {
			out = append(out, remoteGitOutput(t, "--git-dir", dir, "rev-parse", "refs/heads/"+sharedHeaven))
		}
		return out
	}
	time.Sleep(2 * time.Second) // a store moves the git ref just after a commit
	settled := heads()
	time.Sleep(5 * time.Second) // five exchanges on each side
	assert.Equal(t, settled, heads(), "heads of a, b and the remote")
}

// remoteServer is a heaven-server running in the test process, with a
// client of its heaven "shared".
type remoteServer struct {
	t       *testing.T
	name    string
	dataDir string
	url     string
	root    dynamic.Interface
	kube    kubernetes.Interface
}

const sharedHeaven = "shared"

// remoteTimeout bounds each wait of the remote tests.
const remoteTimeout = 90 * time.Second

func startRemoteServer(t *testing.T, name string) *remoteServer {
	t.Helper()
	o := server.NewOptions()
	o.DataDir = t.TempDir()
	o.SecurePort = 0
	require.Empty(t, o.Validate())
	cfg, err := o.Config()
	require.NoError(t, err)
	s, err := cfg.Complete().New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Errorf("heaven-server %s did not stop within 60s", name)
		}
	})
	rs := &remoteServer{t: t, name: name, dataDir: o.DataDir, url: s.URL()}
	root, err := clientcmd.BuildConfigFromFlags(rs.url+server.ClustersPrefix+server.RootHeaven, filepath.Join(o.DataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	shared, err := clientcmd.BuildConfigFromFlags(rs.url+server.ClustersPrefix+sharedHeaven, filepath.Join(o.DataDir, "admin.kubeconfig"))
	require.NoError(t, err)
	rs.root, rs.kube = dynamic.NewForConfigOrDie(root), kubernetes.NewForConfigOrDie(shared)
	rs.eventually("the root heaven serves Heaven objects", func(ctx context.Context) error {
		_, err := rs.root.Resource(v1alpha1.HeavensResource).List(ctx, metav1.ListOptions{})
		return err
	})
	return rs
}

// eventually polls check until it succeeds, failing the test with its last
// error after remoteTimeout.
func (s *remoteServer) eventually(what string, check func(ctx context.Context) error) {
	s.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(s.t.Context(), 200*time.Millisecond, remoteTimeout, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	require.NoError(s.t, err, "server %s: waiting for %s: %v", s.name, what, last)
}

func (s *remoteServer) createHeaven(spec map[string]any) {
	s.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "Heaven",
		"metadata": map[string]any{"name": sharedHeaven}, "spec": spec,
	}}
	_, err := s.root.Resource(v1alpha1.HeavensResource).Create(s.t.Context(), u, metav1.CreateOptions{})
	require.NoError(s.t, err)
}

func (s *remoteServer) heaven(ctx context.Context) (*v1alpha1.Heaven, error) {
	u, err := s.root.Resource(v1alpha1.HeavensResource).Get(ctx, sharedHeaven, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var h v1alpha1.Heaven
	return &h, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &h)
}

// waitRemoteCondition waits until the heaven's RemoteSynced condition has
// status and reason.
func (s *remoteServer) waitRemoteCondition(what string, status metav1.ConditionStatus, reason string) {
	s.t.Helper()
	s.eventually(what, func(ctx context.Context) error {
		h, err := s.heaven(ctx)
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.ConditionRemoteSynced)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %s is %+v, status.remote %+v", v1alpha1.ConditionRemoteSynced, c, h.Status.Remote)
		}
		return nil
	})
}

// waitRemoteSynced waits until the heaven is Ready and has exchanged with
// its remote.
func (s *remoteServer) waitRemoteSynced(what string) {
	s.t.Helper()
	s.waitRemoteCondition(what, metav1.ConditionTrue, v1alpha1.ReasonRemoteSynced)
	s.eventually(what+" (Ready)", func(ctx context.Context) error {
		h, err := s.heaven(ctx)
		if err != nil {
			return err
		}
		if h.Status.Phase != v1alpha1.HeavenPhaseReady || h.Status.Remote == nil || h.Status.Remote.RemoteCommit == "" {
			return fmt.Errorf("phase %q, status.remote %+v", h.Status.Phase, h.Status.Remote)
		}
		return nil
	})
}

func (s *remoteServer) createConfigMap(name string, data map[string]string) {
	s.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: data}
	_, err := s.kube.CoreV1().ConfigMaps("default").Create(s.t.Context(), cm, metav1.CreateOptions{})
	require.NoError(s.t, err)
}

func (s *remoteServer) patchConfigMap(name, patch string) {
	s.t.Helper()
	_, err := s.kube.CoreV1().ConfigMaps("default").Patch(s.t.Context(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	require.NoError(s.t, err)
}

// configMaps are the data of the configmaps in namespace default, by name.
func (s *remoteServer) configMaps(ctx context.Context) map[string]map[string]string {
	list, err := s.kube.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]map[string]string{}
	for _, cm := range list.Items {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		out[cm.Name] = cm.Data
	}
	return out
}

// waitConfigMaps waits until every server holds exactly want.
func waitConfigMaps(t *testing.T, what string, want map[string]map[string]string, servers ...*remoteServer) {
	t.Helper()
	for _, s := range servers {
		s.eventually(what, func(ctx context.Context) error {
			got := s.configMaps(ctx)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return fmt.Errorf("configmaps %s, want %s", names(got), names(want))
			}
			return nil
		})
	}
}

func names(m map[string]map[string]string) string {
	var out []string
	for n, d := range m {
		out = append(out, fmt.Sprintf("%s%v", n, d))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// gitDaemon is `git daemon` serving the bare repositories below a
// directory over git:// on one loopback port, pushes allowed; it can be
// stopped and started again on the same port.
type gitDaemon struct {
	t    *testing.T
	base string
	addr string
	cmd  *exec.Cmd
}

func startGitDaemon(t *testing.T, base string) *gitDaemon {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	d := &gitDaemon{t: t, base: base, addr: l.Addr().String()}
	require.NoError(t, l.Close())
	d.start()
	t.Cleanup(d.stop)
	return d
}

func (d *gitDaemon) start() {
	d.t.Helper()
	_, port, _ := net.SplitHostPort(d.addr)
	d.cmd = exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
		"--listen=127.0.0.1", "--port="+port, "--base-path="+d.base, d.base)
	d.cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	// `git daemon` runs git-daemon as its child, which forks a process per
	// connection: a process group of their own is stopped as a whole.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(d.t, d.cmd.Start())
	err := wait.PollUntilContextTimeout(d.t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c, err := net.Dial("tcp", d.addr)
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	require.NoError(d.t, err, "git daemon does not listen on %s", d.addr)
}

// stop kills the daemon and its connections in flight.
func (d *gitDaemon) stop() {
	if d.cmd == nil {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	_ = d.cmd.Wait()
	d.cmd = nil
}

func remoteGit(t *testing.T, args ...string) {
	t.Helper()
	remoteGitOutput(t, args...)
}

func remoteGitOutput(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}
