package integration

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestRestartKeepsObjectsRevisionsAndCRDs stops the server and starts a new
// one on the same data: objects, their resourceVersions and CRDs are back.
func TestRestartKeepsObjectsRevisionsAndCRDs(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "durable"
	ts.Kubectl(t, h, "", "create", "configmap", "kept", "--from-literal=a=b")
	// kube-apiserver's columns, from its own printers.
	assert.Equal(t, []string{"NAME", "DATA", "AGE"}, strings.Fields(strings.SplitN(ts.Kubectl(t, h, "", "get", "cm", "kept"), "\n", 2)[0]))
	ts.Kubectl(t, h, widgetCRD, "apply", "-f", "-")
	waitKubectl(t, ts, h, "widgets served", "get", "widgets")
	ts.Kubectl(t, h, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":7}}`, "apply", "-f", "-")
	rv := ts.Kubectl(t, h, "", "get", "cm", "kept", "-o", "jsonpath={.metadata.resourceVersion}")
	wrv := ts.Kubectl(t, h, "", "get", "widget", "w1", "-o", "jsonpath={.metadata.resourceVersion}")

	// A new server (Run, from Options) on the same data and port.
	require.NoError(t, ts.Stop())
	require.NoError(t, ts.Start(t.Context()))
	assert.Equal(t, rv, ts.Kubectl(t, h, "", "get", "cm", "kept", "-o", "jsonpath={.metadata.resourceVersion}"))
	assert.Equal(t, "7", ts.Kubectl(t, h, "", "get", "widget", "w1", "-o", "jsonpath={.spec.size}"))
	assert.Equal(t, wrv, ts.Kubectl(t, h, "", "get", "widget", "w1", "-o", "jsonpath={.metadata.resourceVersion}"))
	// The history is readable with git.
	log := ts.Git(t, "log", "--format=%s", h)
	assert.Contains(t, log, "create core/configmaps/default/kept")
	assert.Contains(t, log, "create example.com/widgets/default/w1")
	assert.Contains(t, log, "create apiextensions.k8s.io/customresourcedefinitions/widgets.example.com")
	// Who asked authors the commit; the server commits.
	who := ts.Git(t, "log", "-1", "--format=%an|%cn", h, "--", "core/configmaps/default/kept.json")
	assert.Equal(t, pki.AdminUser+"|heaven", strings.TrimSpace(who))
}

// TestEphemeralResourcesNotInGit: events and leases work like any resource
// but never reach the heaven's branch.
func TestEphemeralResourcesNotInGit(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "ephemeral"
	ctx := t.Context()
	kube := ts.Kube(h)
	_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "durable"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = kube.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "ev"},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "default", Name: "durable"},
		Reason:         "Tested", Message: "hello", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	holder := "me"
	_, err = kube.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "lock"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	got, err := kube.CoordinationV1().Leases("default").Get(ctx, "lock", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "me", *got.Spec.HolderIdentity)
	assert.Equal(t, "hello", ts.Kubectl(t, h, "", "get", "events", "-o", "jsonpath={.items[*].message}"))

	files := ts.Git(t, "ls-tree", "-r", "--name-only", h)
	assert.Contains(t, files, "core/configmaps/default/durable.json")
	assert.NotContains(t, files, "events")
	assert.NotContains(t, files, "leases")
}

// TestForkHeaven: a Heaven that forks another sees its objects at the fork
// point; later changes stay apart.
func TestForkHeaven(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	ts.Kubectl(t, "parent", "", "create", "configmap", "before", "--from-literal=v=1")
	ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"child"},"spec":{"fork":{"heaven":"parent"}}}`, "apply", "-f", "-")
	waitHeavenReady(t, ts, "child")
	assert.Equal(t, "1", ts.Kubectl(t, "child", "", "get", "cm", "before", "-o", "jsonpath={.data.v}"))
	ts.Kubectl(t, "parent", "", "create", "configmap", "after")
	ts.Kubectl(t, "child", "", "create", "configmap", "only-in-child")
	_, err := ts.KubectlErr(t, "child", "", "get", "cm", "after")
	assert.Error(t, err, "a change in the parent after the fork does not reach the fork")
	_, err = ts.KubectlErr(t, "parent", "", "get", "cm", "only-in-child")
	assert.Error(t, err)
	forkedFrom := ts.Kubectl(t, "root", "", "get", "heaven", "child", "-o", "jsonpath={.status.forkedFrom.heaven}")
	assert.Equal(t, "parent", forkedFrom)

	// Deleting the Heaven stops serving it; with deletePolicy Delete the
	// branch goes too.
	ts.Kubectl(t, "root", "", "patch", "heaven", "child", "--type=merge", "-p", `{"spec":{"deletePolicy":"Delete"}}`)
	ts.Kubectl(t, "root", "", "delete", "heaven", "child")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, ts.Git(c, "branch", "--list", "child"), "child")
	}, 30*time.Second, tick, "branch child deleted")
}

// TestOnlyDeclaredHeavensWhenAutoCreateIsOff: unknown heavens are 404
// until a Heaven object names them.
func TestOnlyDeclaredHeavensWhenAutoCreateIsOff(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.AutoCreateHeavens = false })
	out, err := ts.KubectlErr(t, "undeclared", "", "get", "configmaps")
	require.Error(t, err)
	assert.Contains(t, out, "NotFound")
	ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"declared"}}`, "apply", "-f", "-")
	waitKubectl(t, ts, "declared", "declared heaven serves", "get", "configmaps")
	var head string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		h, err := ts.Dynamic("root").Resource(v1alpha1.HeavensResource).Get(t.Context(), "declared", metav1.GetOptions{})
		require.NoError(c, err)
		head, _, _ = unstructured.NestedString(h.Object, "status", "head")
		assert.Len(c, head, 40, "status.head")
	}, 30*time.Second, tick, "status has head")
	// git reads the ref file, which the store moves just after a commit.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, head, strings.TrimSpace(ts.Git(c, "rev-parse", "declared")))
	}, 5*time.Second, tick, "git sees the head in status")
}

// TestIdleHeavenStopsAndRestarts: an idle heaven is stopped, leaves no
// goroutines behind, and the next request starts it again with its data.
func TestIdleHeavenStopsAndRestarts(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.IdleTimeout = 500 * time.Millisecond })
	kube := ts.Kube("sleepy")
	ctx := t.Context()
	_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	onlyRoot := func(c *assert.CollectT) {
		assert.Equal(c, "1", scrapeMetric(c, ts, "heaven_active_heavens"), "heaven_active_heavens")
	}
	require.EventuallyWithT(t, onlyRoot, 30*time.Second, tick, "only root active")
	baseline := runtime.NumGoroutine()
	// Metrics are process-wide: count from here.
	startsBefore := scrapeMetric(t, ts, "heaven_heaven_starts_total")

	for range 3 {
		_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
		require.NoError(t, err, "a stopped heaven starts again on its next request")
		require.EventuallyWithT(t, onlyRoot, 30*time.Second, tick, "sleepy stopped again")
	}
	// Nothing left behind: the goroutine count returns to where it was
	// (some slack for the HTTP client's idle connections).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.LessOrEqual(c, runtime.NumGoroutine(), baseline+10, "goroutines")
	}, 30*time.Second, tick, "goroutines released")
	startsAfter := scrapeMetric(t, ts, "heaven_heaven_starts_total")
	before, _ := strconv.Atoi(startsBefore)
	after, _ := strconv.Atoi(startsAfter)
	assert.Equal(t, 3, after-before, "one start per request after idling, none of its own")
}

// TestAuthenticationAndNames: no credentials is 401, a bad heaven name 400,
// both as Kubernetes Status objects; health is public.
func TestAuthenticationAndNames(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(c *http.Client, path string) (int, metav1.Status) {
		resp, err := c.Get(ts.URL() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var st metav1.Status
		_ = json.Unmarshal(body, &st)
		return resp.StatusCode, st
	}
	code, st := get(anon, "/clusters/team-a/api/v1/namespaces")
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Equal(t, "Status", st.Kind)
	assert.Equal(t, metav1.StatusReasonUnauthorized, st.Reason)
	code, _ = get(anon, "/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get(anon, "/version")
	assert.Equal(t, http.StatusOK, code)

	admin := adminHTTP(t, ts)
	for _, bad := range []string{"Team-A", "a..b", "x.lock", strings.Repeat("a", 64), "-lead", "refs%2Fheads%2Fmain", "a_b"} {
		code, st := get(admin, "/clusters/"+bad+"/api/v1/namespaces")
		assert.Equal(t, http.StatusBadRequest, code, bad)
		assert.Equal(t, metav1.StatusReasonBadRequest, st.Reason, bad)
	}
	code, _ = get(admin, "/clusters/team-a/api/v1/namespaces")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get(admin, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	commits := scrapeMetric(t, ts, "heaven_git_commits_total")
	assert.NotEqual(t, "0", commits, "every heaven's first start commits its namespaces")
}

// TestConcurrentHeavenStarts: heavens started at the same moment share no
// mutable state (run with -race).
func TestConcurrentHeavenStarts(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			name := "parallel-" + strconv.Itoa(i)
			_, err := ts.Kube(name).CoreV1().ConfigMaps("default").Create(t.Context(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
}

// waitKubectl waits until kubectl args succeed in heaven.
func waitKubectl(t *testing.T, ts *framework.HeavenServer, heaven, what string, args ...string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := ts.KubectlErr(t, heaven, "", args...)
		assert.NoError(c, err, out)
	}, 30*time.Second, kubectlTick, what)
}

// waitHeavenReady waits until the Heaven object name in root is Ready.
func waitHeavenReady(t *testing.T, ts *framework.HeavenServer, name string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		h, err := ts.Dynamic(server.RootHeaven).Resource(v1alpha1.HeavensResource).Get(t.Context(), name, metav1.GetOptions{})
		require.NoError(c, err)
		phase, _, _ := unstructured.NestedString(h.Object, "status", "phase")
		assert.Equal(c, string(v1alpha1.HeavenPhaseReady), phase, "status.phase")
	}, 30*time.Second, tick, "Heaven %s Ready", name)
}

// TestDataIsPrivate: the repository holds Secrets and pki/ the CA's key:
// both are the server user's alone (0700), whatever the data directory is.
func TestDataIsPrivate(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	ts.Kubectl(t, "private", "", "create", "secret", "generic", "s", "--from-literal=k=v")
	for _, dir := range []string{ts.RepositoryPath(), filepath.Join(ts.DataDir, "pki")} {
		fi, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), dir)
	}
}
