package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/server"
)

// workClone is a clone of a heaven's branch that a person edits and pushes.
type workClone struct {
	t   *testing.T
	dir string
}

func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Alice", "GIT_AUTHOR_EMAIL=alice@example.com", "GIT_COMMITTER_NAME=Alice", "GIT_COMMITTER_EMAIL=alice@example.com")
}

func cloneHeaven(t *testing.T, url, branch string) *workClone {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "w")
	cmd := exec.Command("git", "clone", "-q", "--branch", branch, url, dir)
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git clone: %s", out)
	return &workClone{t: t, dir: dir}
}

func (w *workClone) run(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = w.dir, gitEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (w *workClone) must(args ...string) string {
	w.t.Helper()
	out, err := w.run(args...)
	require.NoError(w.t, err, "git %v: %s", args, out)
	return strings.TrimSpace(out)
}

// commit writes files (content "" removes one) and commits them.
func (w *workClone) commit(msg string, files map[string]string) string {
	w.t.Helper()
	for path, content := range files {
		p := filepath.Join(w.dir, filepath.FromSlash(path))
		if content == "" {
			require.NoError(w.t, os.Remove(p))
			continue
		}
		require.NoError(w.t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(w.t, os.WriteFile(p, []byte(content), 0o644))
	}
	w.must("add", "-A")
	w.must("commit", "-qm", msg)
	return w.must("rev-parse", "HEAD")
}

// pushBusy pushes branch to a heaven that takes writes meanwhile, as a
// person would: pull (merge) and push again until the push is not behind.
func (w *workClone) pushBusy(branch string) {
	w.t.Helper()
	var out string
	for range 50 {
		w.must("pull", "-q", "--no-rebase", "--no-edit", "origin", branch)
		var err error
		if out, err = w.run("push", "-q", "origin", branch); err == nil {
			return
		}
		require.Regexp(w.t, "fetch first|cannot lock ref", out, "only a push behind the heaven is tried again")
	}
	w.t.Fatalf("push still behind after 50 tries: %s", out)
}

// startGitDaemon serves the server's data directory over git:// with pushes
// allowed, as an operator might; it returns the repository's URL.
func startGitDaemon(t *testing.T, dataDir string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("git", "daemon", "--export-all", "--enable=receive-pack", "--reuseaddr",
		"--listen=127.0.0.1", fmt.Sprintf("--port=%d", port), "--base-path="+dataDir, dataDir)
	cmd.Env = gitEnv()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	eventually(t, 10*time.Second, "git daemon serving", func() (bool, error) {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil, nil
	})
	return fmt.Sprintf("git://127.0.0.1:%d/heavens.git", port)
}

// writeEvery paces each writer of TestPushedFiles: a person pulls and
// pushes between two commits of the server, as on any shared branch.
const writeEvery = time.Second

const configMapJSON = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"},"data":{"v":%q}}`

// TestPushedFiles pushes files people get wrong, through the git CLI to
// the repository's path and through a git daemon: the pre-receive hook
// refuses each, naming the file. The same files moved in without hooks
// (git update-ref) never stop the heaven: writes and a watch go on, the
// file is reported (metric, Event) and served once fixed.
func TestPushedFiles(t *testing.T) {
	bin, err := buildHeavenServer()
	require.NoError(t, err)
	ts := startServer(t, "", func(o *server.Options) { o.HookExecutable = bin })
	kube := ts.kube("pushed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A Heaven object, so that its status reports the files not served.
	heavens := ts.dynamic("root").Resource(heavensGVR)
	_, err = heavens.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "heaven.dev/v1alpha1", "kind": "Heaven", "metadata": map[string]any{"name": "pushed"}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	outsideCondition := func() (status, message string) {
		h, err := heavens.Get(ctx, "pushed", metav1.GetOptions{})
		if err != nil {
			return "", err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(h.Object, "status", "conditions")
		for _, c := range conds {
			if m, _ := c.(map[string]any); m["type"] == "OutsideCommitsHealthy" {
				return fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
			}
		}
		return "", ""
	}
	_, err = kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seed"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Writers and a watch run through everything below.
	watcher, err := kube.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	defer watcher.Stop()
	var watchEnded atomic.Bool
	seen := make(chan string, 10000)
	go func() {
		for ev := range watcher.ResultChan() {
			if ev.Type == watch.Error {
				t.Logf("the watch ended with %v", ev.Object)
				watchEnded.Store(ctx.Err() == nil)
				return
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				seen <- cm.Name
			}
		}
		if ctx.Err() == nil { // the end of the test closes it
			t.Log("the watch's channel closed")
			watchEnded.Store(true)
		}
	}()
	writes, failures := runWriters(ctx, t, kube, 2)

	// file:// rather than a path: git's local clone copies the object
	// directory as it is, and the server consolidates packs meanwhile.
	repo := "file://" + filepath.Join(ts.dataDir, "heavens.git")
	daemon := startGitDaemon(t, ts.dataDir)
	big := fmt.Sprintf(configMapJSON, "big", strings.Repeat("x", 5<<20))
	for _, tc := range []struct {
		name, path, content, refusal string
	}{
		{"truncated JSON", "core/configmaps/default/bad.json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad"`, "not valid JSON"},
		{"file at an unknown path", "notes/todo.json", `{"todo":"everything"}`, "not the path of an object"},
		{"config map under secrets", "core/secrets/default/cm.json", fmt.Sprintf(configMapJSON, "cm", "1"), "kind ConfigMap does not belong in core/secrets/"},
		{"5 MiB object", "core/configmaps/default/big.json", big, "more than the 1572864 bytes an object may have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, url := range []string{repo, daemon} {
				w := cloneHeaven(t, url, "pushed")
				w.commit(tc.name, map[string]string{tc.path: tc.content})
				// Forced, so that the writers' commits meanwhile do not
				// refuse it before the hook sees it.
				out, err := w.run("push", "--force", "origin", "pushed")
				require.Error(t, err, "the hook refuses the push to %s", url)
				require.Contains(t, out, "heaven: pushed: "+tc.path+": ", url)
				require.Contains(t, out, tc.refusal, url)
			}

			// Moved in without hooks, the file is reported, not served,
			// and blocks nothing.
			w := cloneHeaven(t, repo, "pushed")
			bad := w.commit(tc.name, map[string]string{tc.path: tc.content})
			w.must("push", "-q", "origin", "HEAD:refs/scratch/"+strings.ReplaceAll(tc.name, " ", "-"))
			moveBranch(t, ts, "pushed", bad)
			eventually(t, 30*time.Second, "an Event naming "+tc.path, func() (bool, error) {
				return hasProblemEvent(ctx, kube, tc.path, bad), nil
			})
			require.Contains(t, scrapeMetrics(t, ts), `heaven_unserved_files{heaven="pushed"} 1`)
			eventually(t, 30*time.Second, "the Heaven's condition naming "+tc.path, func() (bool, error) {
				status, message := outsideCondition()
				return status == "False" && strings.Contains(message, tc.path) && strings.Contains(message, bad), nil
			})
			if strings.HasPrefix(tc.path, "core/configmaps/default/") {
				name := strings.TrimSuffix(filepath.Base(tc.path), ".json")
				_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
				require.True(t, apierrors.IsNotFound(err), "a file that can't be served is no object: %v", err)
			}

			// A fixing commit (the file removed), pushed through the hook,
			// clears it.
			w.commit("fix "+tc.name, map[string]string{tc.path: ""})
			w.pushBusy("pushed")
			eventually(t, 30*time.Second, "the problem cleared", func() (bool, error) {
				status, _ := outsideCondition()
				return status == "True" && strings.Contains(scrapeMetrics(t, ts), `heaven_unserved_files{heaven="pushed"} 0`), nil
			})
		})
	}

	// YAML from people is served, through the hook and the daemon.
	w := cloneHeaven(t, daemon, "pushed")
	w.commit("yaml", map[string]string{"core/configmaps/default/by-hand.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: by-hand\n  namespace: default\ndata:\n  written: by hand\n"})
	w.pushBusy("pushed")
	eventually(t, 30*time.Second, "the YAML object served", func() (bool, error) {
		cm, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "by-hand", metav1.GetOptions{})
		return err == nil && cm.Data["written"] == "by hand", nil
	})

	cancel()
	require.Zero(t, failures.Load(), "no write failed (of %d)", writes.Load())
	require.Positive(t, writes.Load(), "writers ran meanwhile")
	require.False(t, watchEnded.Load(), "the watch never ended")
	names := map[string]bool{}
	for len(seen) > 0 {
		names[<-seen] = true
	}
	require.True(t, names["by-hand"], "the watch saw the pushed object")
}

// runWriters creates config maps from n goroutines until ctx ends, each at
// most every writeEvery: a heaven that people push to in between.
func runWriters(ctx context.Context, t *testing.T, kube kubernetes.Interface, n int) (writes, failures *atomic.Int64) {
	writes, failures = &atomic.Int64{}, &atomic.Int64{}
	for i := range n {
		go func() {
			pace := time.NewTicker(writeEvery)
			defer pace.Stop()
			for j := 0; ctx.Err() == nil; j++ {
				select {
				case <-pace.C:
				case <-ctx.Done():
					return
				}
				_, err := kube.CoreV1().ConfigMaps("default").Create(ctx,
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-%d", i, j)}}, metav1.CreateOptions{})
				switch {
				case err == nil:
					writes.Add(1)
				case ctx.Err() == nil:
					failures.Add(1)
					t.Logf("write failed: %v", err)
				}
			}
		}()
	}
	return writes, failures
}

// moveBranch moves a heaven's branch to commit with git update-ref, as an
// operator would, trying again while the ref is locked: the writers'
// commits lock it for a few milliseconds each (see gitrepo's held commits).
func moveBranch(t *testing.T, ts *testServer, heaven, commit string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		// Each attempt flushes: a writer's commit since the last one
		// holds the ref again.
		require.NoError(c, ts.FlushGit())
		cmd := exec.Command("git", "--git-dir", ts.RepositoryPath(), "update-ref", "refs/heads/"+heaven, commit)
		cmd.Env = gitEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			require.Contains(c, string(out), "cannot lock ref", "only a locked ref is tried again")
		}
		assert.NoError(c, err, "git update-ref: %s", out)
	}, 10*time.Second, 10*time.Millisecond, "git update-ref refs/heads/%s %s", heaven, commit)
}

func hasProblemEvent(ctx context.Context, kube kubernetes.Interface, path, commit string) bool {
	events, err := kube.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return false
	}
	for _, ev := range events.Items {
		if ev.Reason == "OutsideCommitNotServed" && strings.Contains(ev.Message, path) && strings.Contains(ev.Message, commit) {
			return true
		}
	}
	return false
}

// scrapeMetrics returns the server's /metrics text.
func scrapeMetrics(t *testing.T, ts *testServer) string {
	t.Helper()
	c, err := rest2http(ts)
	require.NoError(t, err)
	resp, err := c.Get(ts.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	var b strings.Builder
	_, err = io.Copy(&b, resp.Body)
	require.NoError(t, err)
	return b.String()
}
