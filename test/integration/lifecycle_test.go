package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
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

	"github.com/heaven-dev/heaven/pkg/server"
)

// TestRestartKeepsObjectsRevisionsAndCRDs stops the server and starts a new
// one on the same data: objects, their resourceVersions and CRDs are back.
func TestRestartKeepsObjectsRevisionsAndCRDs(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, nil)
	const h = "durable"
	ts.kubectl(h, "", "create", "configmap", "kept", "--from-literal=a=b")
	ts.kubectl(h, widgetCRD, "apply", "-f", "-")
	eventually(t, 30*time.Second, "widgets served", func() (bool, error) {
		_, err := ts.kubectlErr(h, "", "get", "widgets")
		return err == nil, nil
	})
	ts.kubectl(h, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":7}}`, "apply", "-f", "-")
	rv := ts.kubectl(h, "", "get", "cm", "kept", "-o", "jsonpath={.metadata.resourceVersion}")
	wrv := ts.kubectl(h, "", "get", "widget", "w1", "-o", "jsonpath={.metadata.resourceVersion}")
	ts.stop()

	ts2 := startServer(t, dir, nil)
	assert.Equal(t, rv, ts2.kubectl(h, "", "get", "cm", "kept", "-o", "jsonpath={.metadata.resourceVersion}"))
	assert.Equal(t, "7", ts2.kubectl(h, "", "get", "widget", "w1", "-o", "jsonpath={.spec.size}"))
	assert.Equal(t, wrv, ts2.kubectl(h, "", "get", "widget", "w1", "-o", "jsonpath={.metadata.resourceVersion}"))
	// The history is readable with git.
	log := ts2.git("log", "--format=%s", h)
	assert.Contains(t, log, "create core/configmaps/default/kept")
	assert.Contains(t, log, "create example.com/widgets/default/w1")
	assert.Contains(t, log, "create apiextensions.k8s.io/customresourcedefinitions/widgets.example.com")
}

// TestEphemeralResourcesNotInGit: events and leases work like any resource
// but never reach the heaven's branch.
func TestEphemeralResourcesNotInGit(t *testing.T) {
	ts := startServer(t, "", nil)
	const h = "ephemeral"
	ctx := context.Background()
	kube := ts.kube(h)
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
	assert.Equal(t, "hello", ts.kubectl(h, "", "get", "events", "-o", "jsonpath={.items[*].message}"))

	files := ts.git("ls-tree", "-r", "--name-only", h)
	assert.Contains(t, files, "core/configmaps/default/durable.json")
	assert.NotContains(t, files, "events")
	assert.NotContains(t, files, "leases")
}

// TestForkHeaven: a Heaven that forks another sees its objects at the fork
// point; later changes stay apart.
func TestForkHeaven(t *testing.T) {
	ts := startServer(t, "", nil)
	ts.kubectl("parent", "", "create", "configmap", "before", "--from-literal=v=1")
	ts.kubectl("root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"child"},"spec":{"fork":{"heaven":"parent"}}}`, "apply", "-f", "-")
	eventually(t, 30*time.Second, "fork Ready", func() (bool, error) {
		out, err := ts.kubectlErr("root", "", "get", "heaven", "child", "-o", "jsonpath={.status.phase}")
		return out == "Ready", err
	})
	assert.Equal(t, "1", ts.kubectl("child", "", "get", "cm", "before", "-o", "jsonpath={.data.v}"))
	ts.kubectl("parent", "", "create", "configmap", "after")
	ts.kubectl("child", "", "create", "configmap", "only-in-child")
	_, err := ts.kubectlErr("child", "", "get", "cm", "after")
	assert.Error(t, err, "a change in the parent after the fork does not reach the fork")
	_, err = ts.kubectlErr("parent", "", "get", "cm", "only-in-child")
	assert.Error(t, err)
	forkedFrom := ts.kubectl("root", "", "get", "heaven", "child", "-o", "jsonpath={.status.forkedFrom.heaven}")
	assert.Equal(t, "parent", forkedFrom)

	// Deleting the Heaven stops serving it; with deletePolicy Delete the
	// branch goes too.
	ts.kubectl("root", "", "patch", "heaven", "child", "--type=merge", "-p", `{"spec":{"deletePolicy":"Delete"}}`)
	ts.kubectl("root", "", "delete", "heaven", "child")
	eventually(t, 30*time.Second, "branch child deleted", func() (bool, error) {
		return !strings.Contains(ts.git("branch", "--list", "child"), "child"), nil
	})
}

// TestOnlyDeclaredHeavensWhenAutoCreateIsOff: unknown heavens are 404
// until a Heaven object names them.
func TestOnlyDeclaredHeavensWhenAutoCreateIsOff(t *testing.T) {
	ts := startServer(t, "", func(o *server.Options) { o.AutoCreateHeavens = false })
	out, err := ts.kubectlErr("undeclared", "", "get", "configmaps")
	require.Error(t, err)
	assert.Contains(t, out, "NotFound")
	ts.kubectl("root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"declared"}}`, "apply", "-f", "-")
	eventually(t, 30*time.Second, "declared heaven serves", func() (bool, error) {
		_, err := ts.kubectlErr("declared", "", "get", "configmaps")
		return err == nil, nil
	})
	h, err := ts.dynamic("root").Resource(heavensGVR).Get(context.Background(), "declared", metav1.GetOptions{})
	require.NoError(t, err)
	head, _, _ := unstructured.NestedString(h.Object, "status", "head")
	eventually(t, 30*time.Second, "status has head", func() (bool, error) {
		h, err := ts.dynamic("root").Resource(heavensGVR).Get(context.Background(), "declared", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		head, _, _ = unstructured.NestedString(h.Object, "status", "head")
		return len(head) == 40, nil
	})
	eventually(t, 5*time.Second, "git sees the head in status", func() (bool, error) {
		return strings.TrimSpace(ts.git("rev-parse", "declared")) == head, nil
	})
}

// TestIdleHeavenStopsAndRestarts: an idle heaven is stopped, leaves no
// goroutines behind, and the next request starts it again with its data.
func TestIdleHeavenStopsAndRestarts(t *testing.T) {
	ts := startServer(t, "", func(o *server.Options) { o.IdleTimeout = 500 * time.Millisecond })
	kube := ts.kube("sleepy")
	ctx := context.Background()
	_, err := kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	activeIs := func(want string) func() (bool, error) {
		return func() (bool, error) {
			v, err := scrapeMetric(ts, "heaven_active_heavens")
			return v == want, err
		}
	}
	eventually(t, 30*time.Second, "only root active", activeIs("1"))
	baseline := runtime.NumGoroutine()
	// Metrics are process-wide: count from here.
	startsBefore, err := scrapeMetric(ts, "heaven_heaven_starts_total")
	require.NoError(t, err)

	for range 3 {
		_, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{})
		require.NoError(t, err, "a stopped heaven starts again on its next request")
		eventually(t, 30*time.Second, "sleepy stopped again", activeIs("1"))
	}
	// Nothing left behind: the goroutine count returns to where it was
	// (some slack for the HTTP client's idle connections).
	eventually(t, 30*time.Second, "goroutines released", func() (bool, error) {
		return runtime.NumGoroutine() <= baseline+10, nil
	})
	startsAfter, err := scrapeMetric(ts, "heaven_heaven_starts_total")
	require.NoError(t, err)
	before, _ := strconv.Atoi(startsBefore)
	after, _ := strconv.Atoi(startsAfter)
	assert.Equal(t, 3, after-before, "one start per request after idling, none of its own")
}

// TestAuthenticationAndNames: no credentials is 401, a bad heaven name 400,
// both as Kubernetes Status objects; health is public.
func TestAuthenticationAndNames(t *testing.T) {
	ts := startServer(t, "", nil)
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(c *http.Client, path string) (int, metav1.Status) {
		resp, err := c.Get(ts.url + path)
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

	admin, err := rest2http(ts)
	require.NoError(t, err)
	for _, bad := range []string{"Team-A", "a..b", "x.lock", strings.Repeat("a", 64), "-lead", "refs%2Fheads%2Fmain", "a_b"} {
		code, st := get(admin, "/clusters/"+bad+"/api/v1/namespaces")
		assert.Equal(t, http.StatusBadRequest, code, bad)
		assert.Equal(t, metav1.StatusReasonBadRequest, st.Reason, bad)
	}
	code, _ = get(admin, "/clusters/team-a/api/v1/namespaces")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get(admin, "/metrics")
	assert.Equal(t, http.StatusOK, code)
	commits, err := scrapeMetric(ts, "heaven_git_commits_total")
	require.NoError(t, err)
	assert.NotEqual(t, "0", commits, "every heaven's first start commits its namespaces")
}

// TestConcurrentHeavenStarts: heavens started at the same moment share no
// mutable state (run with -race).
func TestConcurrentHeavenStarts(t *testing.T) {
	ts := startServer(t, "", nil)
	const n = 6
	errs := make(chan error, n)
	for i := range n {
		go func() {
			name := "parallel-" + strconv.Itoa(i)
			_, err := ts.kube(name).CoreV1().ConfigMaps("default").Create(context.Background(),
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			errs <- err
		}()
	}
	for range n {
		require.NoError(t, <-errs)
	}
}
