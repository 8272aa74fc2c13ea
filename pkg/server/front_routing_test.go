package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
)

// frontEnv is a heaven-server as New builds it (its certificates, stores,
// authenticator, root handler and front), not running, whose heavens are
// fake API servers.
type frontEnv struct {
	s     *Server
	fakes *fakeServers
	// Client certificates.
	admin, syncer, unknownCA *x509.Certificate
}

func newFrontEnv(t testing.TB) *frontEnv {
	t.Helper()
	o := NewOptions()
	o.DataDir = t.TempDir()
	o.SecurePort = 0
	require.Empty(t, o.Validate())
	cfg, err := o.Config()
	require.NoError(t, err)
	s, err := cfg.Complete().New()
	require.NoError(t, err)
	t.Cleanup(func() { s.close(context.Background()) })
	e := &frontEnv{s: s, fakes: newFakeServers()}
	s.heavens.newServer = e.fakes.newServer
	// Which heavens may start is the registry's question (its tests ask
	// it); the server's own answer needs root running.
	s.heavens.allowed = func(context.Context, string) (bool, error) { return true, nil }

	e.admin = clientCert(t, s.pki, "jane", AdministratorsGroup)
	e.syncer = clientCert(t, s.pki, pki.SyncerUser("team-a", "east"), pki.SyncerGroup)
	other, err := pki.Ensure(t.TempDir(), nil)
	require.NoError(t, err)
	e.unknownCA = clientCert(t, other, "mallory")
	return e
}

// clientCert issues a client certificate of b's CA.
func clientCert(t testing.TB, b *pki.Bundle, user string, groups ...string) *x509.Certificate {
	t.Helper()
	certPEM, _, err := b.IssueClientCert(user, groups, time.Hour)
	require.NoError(t, err)
	block, _ := pem.Decode(certPEM)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

// serve sends one request through the front, as from a TLS client that
// presented cert (nil: none), and returns the response.
func (e *frontEnv) serve(method, target string, cert *x509.Certificate) *http.Response {
	r := httptest.NewRequest(method, target, nil)
	r.TLS = &tls.ConnectionState{HandshakeComplete: true}
	if cert != nil {
		r.TLS.PeerCertificates = []*x509.Certificate{cert}
	}
	w := httptest.NewRecorder()
	e.s.front.ServeHTTP(w, r)
	return w.Result()
}

func TestFrontRouting(t *testing.T) {
	e := newFrontEnv(t)
	e.fakes.fail["broken"] = errors.New("no storage for you")
	e.s.heavens.allowed = func(_ context.Context, name string) (bool, error) { return name != "undeclared", nil }

	type want struct {
		code int
		// body: the fake heaven's answer "heaven=<name> path=<path>
		// user=<user>", or what the answer contains.
		body string
		// reason, when the answer is a Kubernetes Status.
		reason metav1.StatusReason
	}
	for _, tc := range []struct {
		name   string
		path   string
		certOf func(*frontEnv) *x509.Certificate // nil: no credentials
		want   want
	}{
		// Routing to heavens.
		{name: "a heaven's API", path: "/clusters/team-a/api/v1/namespaces", certOf: admin,
			want: want{code: http.StatusOK, body: "heaven=team-a path=/api/v1/namespaces user=jane"}},
		{name: "a heaven's root", path: "/clusters/team-a", certOf: admin,
			want: want{code: http.StatusOK, body: "heaven=team-a path=/ user=jane"}},
		{name: "a heaven's root with a slash", path: "/clusters/team-a/", certOf: admin,
			want: want{code: http.StatusOK, body: "heaven=team-a path=/ user=jane"}},
		{name: "a query stays with the request", path: "/clusters/b/api/v1/configmaps?watch=true", certOf: admin,
			want: want{code: http.StatusOK, body: "heaven=b path=/api/v1/configmaps user=jane"}},
		{name: "an undeclared heaven", path: "/clusters/undeclared/api", certOf: admin,
			want: want{code: http.StatusNotFound, reason: metav1.StatusReasonNotFound, body: `heavens.heaven.dev \"undeclared\" not found`}},
		{name: "a heaven that cannot start", path: "/clusters/broken/api", certOf: admin,
			want: want{code: http.StatusServiceUnavailable, reason: metav1.StatusReasonServiceUnavailable, body: "no storage for you"}},

		// Names that are not heaven names.
		{name: "upper case", path: "/clusters/Team-A/api", certOf: admin, want: badName},
		{name: "dots", path: "/clusters/a..b/api", certOf: admin, want: badName},
		{name: "a ref lock name", path: "/clusters/x.lock/api", certOf: admin, want: badName},
		{name: "64 characters", path: "/clusters/" + strings.Repeat("a", 64) + "/api", certOf: admin, want: badName},
		{name: "a leading dash", path: "/clusters/-lead/api", certOf: admin, want: badName},
		{name: "an escaped slash", path: "/clusters/refs%2Fheads%2Fmain/api", certOf: admin, want: badName},
		{name: "an underscore", path: "/clusters/a_b/api", certOf: admin, want: badName},
		{name: "no name", path: "/clusters/", certOf: admin, want: badName},

		// Authentication.
		{name: "no credentials for a heaven", path: "/clusters/team-a/api",
			want: want{code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized}},
		{name: "no credentials for a bad name: 401 before 400", path: "/clusters/Team-A/api",
			want: want{code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized}},
		{name: "a certificate of another CA", path: "/clusters/team-a/api", certOf: func(e *frontEnv) *x509.Certificate { return e.unknownCA },
			want: want{code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized}},

		// The root endpoints: some public, the rest for users.
		{name: "version is public", path: "/version",
			want: want{code: http.StatusOK, body: `"gitVersion"`}},
		{name: "healthz is public", path: "/healthz",
			want: want{code: http.StatusOK, body: "ok"}},
		{name: "livez is public", path: "/livez",
			want: want{code: http.StatusOK, body: "ok"}},
		{name: "readyz is public, and not ready before root runs", path: "/readyz",
			want: want{code: http.StatusServiceUnavailable, body: "the root heaven is starting"}},
		{name: "metrics need credentials", path: "/metrics",
			want: want{code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized}},
		{name: "metrics for a user", path: "/metrics", certOf: admin,
			want: want{code: http.StatusOK, body: "# HELP"}},
		{name: "another path of the root", path: "/api/v1/namespaces", certOf: admin,
			want: want{code: http.StatusNotFound, reason: metav1.StatusReasonNotFound}},

		// A syncer's credential reaches its heaven (the scope's own
		// tests cover the rest).
		{name: "a syncer in its heaven", path: "/clusters/team-a/api/v1/configmaps", certOf: syncerCert,
			want: want{code: http.StatusOK, body: "heaven=team-a path=/api/v1/configmaps user=" + pki.SyncerUser("team-a", "east")}},
		{name: "a syncer in another heaven", path: "/clusters/team-b/api/v1/configmaps", certOf: syncerCert,
			want: want{code: http.StatusForbidden, reason: metav1.StatusReasonForbidden}},
		{name: "a syncer and metrics", path: "/metrics", certOf: syncerCert,
			want: want{code: http.StatusForbidden, reason: metav1.StatusReasonForbidden}},
		{name: "a syncer and health", path: "/healthz", certOf: syncerCert,
			want: want{code: http.StatusOK, body: "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cert *x509.Certificate
			if tc.certOf != nil {
				cert = tc.certOf(e)
			}
			resp := e.serve(http.MethodGet, tc.path, cert)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, tc.want.code, resp.StatusCode, "%s", body)
			if tc.want.reason != "" {
				var st metav1.Status
				require.NoError(t, json.Unmarshal(body, &st), "a Status: %s", body)
				assert.Equal(t, "Status", st.Kind)
				assert.Equal(t, "v1", st.APIVersion)
				assert.Equal(t, metav1.StatusFailure, st.Status)
				assert.Equal(t, tc.want.reason, st.Reason)
				assert.EqualValues(t, tc.want.code, st.Code)
			}
			if strings.HasPrefix(tc.want.body, "heaven=") {
				assert.Equal(t, tc.want.body, string(body))
			} else {
				assert.Contains(t, string(body), tc.want.body)
			}
		})
	}
	// Nothing started for a name that is no heaven's, nor for requests
	// that were refused.
	assert.ElementsMatch(t, []string{"team-a", "b"}, e.s.heavens.active())
}

var badName = struct {
	code   int
	body   string
	reason metav1.StatusReason
}{code: http.StatusBadRequest, body: "heaven name", reason: metav1.StatusReasonBadRequest}

func admin(e *frontEnv) *x509.Certificate      { return e.admin }
func syncerCert(e *frontEnv) *x509.Certificate { return e.syncer }

// TestFrontCountsRequests: requests to a heaven are counted by heaven,
// verb and code on /metrics, watches as WATCH.
func TestFrontCountsRequests(t *testing.T) {
	e := newFrontEnv(t)
	series := []string{
		`heaven_requests_total{code="200",heaven="counted",verb="GET"}`,
		`heaven_requests_total{code="200",heaven="counted",verb="WATCH"}`,
		`heaven_requests_total{code="200",heaven="counted",verb="DELETE"}`,
		`heaven_request_duration_seconds_count{heaven="counted",verb="GET"}`,
		`heaven_request_duration_seconds_count{heaven="counted",verb="WATCH"}`,
	}
	// The metrics are the process's: count from here.
	before := e.metrics(t, series...)
	for _, path := range []string{
		"/clusters/counted/api/v1/configmaps",
		"/clusters/counted/api/v1/configmaps",
		"/clusters/counted/api/v1/configmaps?watch=true",
		"/clusters/counted/api/v1/configmaps?watch=1",
		"/clusters/counted/api/v1/secrets?watch=false",
	} {
		resp := e.serve(http.MethodGet, path, e.admin)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	resp := e.serve(http.MethodDelete, "/clusters/counted/api/v1/namespaces/x", e.admin)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	after := e.metrics(t, series...)
	for i, want := range []float64{3, 2, 1, 3, 0} {
		assert.Equal(t, want, after[i]-before[i], series[i])
	}
}

// metrics reads the values of series from /metrics (0 for a series not
// there yet).
func (e *frontEnv) metrics(t *testing.T, series ...string) []float64 {
	t.Helper()
	resp := e.serve(http.MethodGet, "/metrics", e.admin)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	values := make([]float64, len(series))
	for _, line := range strings.Split(string(body), "\n") {
		for i, s := range series {
			if v, ok := strings.CutPrefix(line, s+" "); ok {
				values[i], err = strconv.ParseFloat(v, 64)
				require.NoError(t, err, line)
			}
		}
	}
	return values
}

// TestFrontLoopback: requests of a heaven's own controllers (through the
// in-memory listener) need no credentials, never start a heaven and are
// not counted.
func TestFrontLoopback(t *testing.T) {
	e := newFrontEnv(t)
	loopback := func(path string) *http.Response {
		r := httptest.NewRequest(http.MethodGet, path, nil).WithContext(withLoopback(context.Background()))
		w := httptest.NewRecorder()
		e.s.front.ServeHTTP(w, r)
		return w.Result()
	}

	resp := loopback("/clusters/asleep/api/v1/namespaces")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Empty(t, e.fakes.servers("asleep"), "a heaven's own controllers do not start it")

	before := e.metrics(t, `heaven_requests_total{code="200",heaven="awake",verb="GET"}`)
	require.Equal(t, http.StatusOK, e.serve(http.MethodGet, "/clusters/awake/api", e.admin).StatusCode)
	resp = loopback("/clusters/awake/api/v1/namespaces")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "heaven=awake path=/api/v1/namespaces user="+loopbackUser.Name, string(body))

	after := e.metrics(t, `heaven_requests_total{code="200",heaven="awake",verb="GET"}`)
	assert.Equal(t, before[0]+1, after[0], "the admin's request only")
}

// TestFrontOwnWatches: a heaven's own watches (loopback, impersonating
// nobody) go to its OwnWatchHandler; every other request to its Handler.
func TestFrontOwnWatches(t *testing.T) {
	e := newFrontEnv(t)
	require.Equal(t, http.StatusOK, e.serve(http.MethodGet, "/clusters/awake/api", e.admin).StatusCode)
	for _, tc := range []struct {
		name        string
		loopback    bool
		query       string
		impersonate string
		own         bool
	}{
		{"loopback watch", true, "?watch=true", "", true},
		{"loopback watch=1", true, "?watch=1&resourceVersion=5", "", true},
		{"loopback list", true, "", "", false},
		{"loopback watch=false", true, "?watch=false", "", false},
		{"loopback watch as someone else", true, "?watch=true", "alice", false},
		{"external watch", false, "?watch=true", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/clusters/awake/api/v1/namespaces"+tc.query, nil)
			if tc.loopback {
				r = r.WithContext(withLoopback(context.Background()))
			} else {
				r.TLS = &tls.ConnectionState{HandshakeComplete: true, PeerCertificates: []*x509.Certificate{e.admin}}
			}
			if tc.impersonate != "" {
				r.Header.Set("Impersonate-User", tc.impersonate)
			}
			w := httptest.NewRecorder()
			e.s.front.ServeHTTP(w, r)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, tc.own, strings.HasPrefix(w.Body.String(), "own-watch "), w.Body.String())
		})
	}
}

// FuzzFrontHeavenNames: whatever a client puts where the heaven's name
// goes, the front answers 400 for a name that is not a heaven name and
// never fails otherwise (no panic, no 5xx from the name).
func FuzzFrontHeavenNames(f *testing.F) {
	e := newFrontEnv(f)
	for _, seed := range []string{"team-a", "team/x", "team%2Fx", "..", "a.lock", "ROOT", "", "%00", strings.Repeat("a", 64)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, name string) {
		target := "/clusters/" + name + "/api"
		if _, err := url.ParseRequestURI(target); err != nil || strings.ContainsAny(name, "/?# \t\r\n") {
			return // not one path segment a client could send
		}
		resp := e.serve(http.MethodGet, target, e.admin)
		_ = resp.Body.Close()
		valid := v1alpha1.ValidateHeavenName(name) == nil
		switch {
		case valid && resp.StatusCode != http.StatusOK:
			t.Fatalf("%s: %d for a valid name", target, resp.StatusCode)
		case !valid && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound:
			t.Fatalf("%s: %d, want 400", target, resp.StatusCode)
		}
	})
}

// TestOwnEndpointsAreForAdministrators: heaven-server's /metrics (and any
// other endpoint of its own that is not public) answers server
// administrators and whom root's RBAC grants it; a tenant gets 403.
func TestOwnEndpointsAreForAdministrators(t *testing.T) {
	e := newFrontEnv(t)
	tenant := clientCert(t, e.s.pki, "alice", "developers")
	for _, tc := range []struct {
		path string
		cert *x509.Certificate
		want int
	}{
		{"/metrics", e.admin, http.StatusOK},
		{"/metrics", tenant, http.StatusForbidden},
		{"/debug/pprof/", tenant, http.StatusForbidden},
		{"/healthz", tenant, http.StatusOK},
		{"/version", nil, http.StatusOK},
	} {
		resp := e.serve(http.MethodGet, tc.path, tc.cert)
		_ = resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, tc.path)
	}
}
