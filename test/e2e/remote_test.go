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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// The headless-cluster scenario: two heaven-servers with their own data,
// coordinating only through a git server on loopback. Heaven "shared"
// tracks the same remote branch on both; what either side creates appears
// on the other, through an outage of the git server too.
func TestRemoteTwoServersConvergeThroughGitDaemon(t *testing.T) {
	daemon := startGitDaemon(t)
	remote := map[string]any{"url": daemon.url, "interval": "1s"}

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
	// including different fields of one object, one write a second: each
	// write lands between two failed exchanges (interval 1s). The outage
	// is a real passage of time, not a wait for something.
	daemon.stop()
	outage := time.Now()
	a.patchConfigMap("both", `{"data":{"from-a":"x"}}`)
	b.patchConfigMap("both", `{"data":{"from-b":"y"}}`)
	for i := 3; i < 8; i++ {
		a.createConfigMap(fmt.Sprintf("from-a-%d", i), map[string]string{"n": fmt.Sprint(i)})
		b.createConfigMap(fmt.Sprintf("from-b-%d", i), map[string]string{"n": fmt.Sprint(i)})
		want[fmt.Sprintf("from-a-%d", i)] = map[string]string{"n": fmt.Sprint(i)}
		want[fmt.Sprintf("from-b-%d", i)] = map[string]string{"n": fmt.Sprint(i)}
		time.Sleep(time.Second) // the next exchange fails meanwhile
	}
	want["both"] = map[string]string{"base": "1", "from-a": "x", "from-b": "y"}
	for _, s := range []*remoteServer{a, b} {
		s.waitRemoteCondition("the outage is reported", metav1.ConditionFalse, v1alpha1.ReasonRemoteUnreachable)
		_, err := s.kube.CoreV1().ConfigMaps("default").Get(t.Context(), "from-"+s.name+"-7", metav1.GetOptions{})
		require.NoError(t, err, "a heaven keeps working without its remote")
	}
	time.Sleep(time.Until(outage.Add(10 * time.Second))) // the outage lasts 10s

	daemon.start()
	back := time.Now()
	waitConfigMaps(t, "both sides caught up after the outage", want, a, b)
	t.Logf("converged %s after the git server came back", time.Since(back).Round(time.Millisecond))
	a.waitRemoteSynced("a reports the remote synced again")
	b.waitRemoteSynced("b reports the remote synced again")
	assert.Equal(t, a.configMaps(t.Context()), b.configMaps(t.Context()), "nothing lost, nothing different")

	// Converged servers leave the branches alone: no merge commits sent
	// back and forth. Settled is when a, b and the remote hold the same
	// files (a heaven that holds what the remote holds does not push, so
	// its head may be another commit of the same tree), read by git from
	// the ref files, which a store moves just after a commit.
	repos := []string{a.RepositoryPath(), b.RepositoryPath(), daemon.repo}
	revParse := func(t require.TestingT, rev string) []string {
		var out []string
		for _, dir := range repos {
			out = append(out, strings.TrimSpace(framework.Git(t, "--git-dir", dir, "rev-parse", rev)))
		}
		return out
	}
	branch := "refs/heads/" + sharedHeaven
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		trees := revParse(c, branch+"^{tree}")
		assert.Equal(c, []string{trees[0], trees[0], trees[0]}, trees, "trees of a, b and the remote")
	}, remoteTimeout, remoteTick, "a, b and the remote hold the same files")
	// Then five exchanges on each side (a real passage of time), polled:
	// no head moves.
	settled := revParse(t, branch)
	quiet := time.NewTicker(250 * time.Millisecond)
	defer quiet.Stop()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); <-quiet.C {
		require.Equal(t, settled, revParse(t, branch), "heads of a, b and the remote")
	}
}

// remoteServer is a heaven-server running in the test process, with a
// client of its heaven "shared".
type remoteServer struct {
	*framework.HeavenServer
	t    *testing.T
	name string
	root dynamic.Interface
	kube kubernetes.Interface // of heaven "shared"
}

const sharedHeaven = "shared"

const (
	// remoteTimeout bounds each wait of the remote tests.
	remoteTimeout = 90 * time.Second
	// remoteTick is how often their conditions are checked.
	remoteTick = 200 * time.Millisecond
)

func startRemoteServer(t *testing.T, name string) *remoteServer {
	t.Helper()
	hs := framework.StartHeavenServer(t, nil)
	return &remoteServer{HeavenServer: hs, t: t, name: name, root: hs.Dynamic(server.RootHeaven), kube: hs.Kube(sharedHeaven)}
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
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		ctx := s.t.Context()
		h, err := s.heaven(ctx)
		require.NoError(c, err)
		cond := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.ConditionRemoteSynced)
		assert.Truef(c, cond != nil && cond.Status == status && cond.Reason == reason,
			"condition %s is %+v, status.remote %+v", v1alpha1.ConditionRemoteSynced, cond, h.Status.Remote)
	}, remoteTimeout, remoteTick, "server %s: %s", s.name, what)
}

// waitRemoteSynced waits until the heaven is Ready and has exchanged with
// its remote.
func (s *remoteServer) waitRemoteSynced(what string) {
	s.t.Helper()
	waitRemoteSynced(s.t, s.HeavenServer, sharedHeaven, "server "+s.name+": "+what)
}

// waitRemoteSynced waits until heaven name of hs is Ready, has fetched its
// remote branch, and its last exchange with the remote succeeded.
func waitRemoteSynced(t *testing.T, hs *framework.HeavenServer, name, what string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		u, err := hs.Dynamic(server.RootHeaven).Resource(v1alpha1.HeavensResource).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		var h v1alpha1.Heaven
		require.NoError(c, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &h))
		cond := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.ConditionRemoteSynced)
		assert.Truef(c, cond != nil && cond.Status == metav1.ConditionTrue && cond.Reason == v1alpha1.ReasonRemoteSynced,
			"condition %s is %+v", v1alpha1.ConditionRemoteSynced, cond)
		assert.Truef(c, h.Status.Phase == v1alpha1.HeavenPhaseReady && h.Status.Remote != nil && h.Status.Remote.RemoteCommit != "",
			"phase %q, status.remote %+v", h.Status.Phase, h.Status.Remote)
	}, remoteTimeout, remoteTick, "heaven %s: %s", name, what)
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
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			got := s.configMaps(t.Context())
			assert.Equalf(c, fmt.Sprint(want), fmt.Sprint(got), "configmaps %s, want %s", names(got), names(want))
		}, remoteTimeout, remoteTick, "server %s: %s", s.name, what)
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

// gitDaemon is `git daemon` serving an empty bare repository, the
// upstream of the test's servers, over git:// on one loopback port, pushes
// allowed; it can be stopped and started again on the same port.
type gitDaemon struct {
	t    *testing.T
	base string
	addr string
	cmd  *exec.Cmd
	// repo is the repository's path, url its address.
	repo, url string
}

func startGitDaemon(t *testing.T) *gitDaemon {
	t.Helper()
	base := t.TempDir()
	repo := filepath.Join(base, "heavens.git")
	framework.Git(t, "init", "-q", "--bare", repo)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	d := &gitDaemon{t: t, base: base, addr: l.Addr().String(), repo: repo}
	d.url = "git://" + d.addr + "/heavens.git"
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
	d.cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	// `git daemon` runs git-daemon as its child, which forks a process per
	// connection: a process group of their own is stopped as a whole.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(d.t, d.cmd.Start())
	require.EventuallyWithT(d.t, func(c *assert.CollectT) {
		conn, err := net.Dial("tcp", d.addr)
		if assert.NoError(c, err) {
			conn.Close()
		}
	}, 10*time.Second, 20*time.Millisecond, "git daemon listening on %s", d.addr)
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
