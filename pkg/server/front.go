package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/authorization"
)

// ClustersPrefix is where heavens are served: /clusters/<name>/...
const ClustersPrefix = "/clusters/"

// MaxHeavenNameLength keeps a heaven name a DNS label (and a short branch).
const MaxHeavenNameLength = v1alpha1.MaxHeavenNameLength

// ValidateHeavenName accepts DNS labels (v1alpha1.ValidateHeavenName).
var ValidateHeavenName = v1alpha1.ValidateHeavenName

// AdministratorsGroup is, besides system:masters, the group of server
// administrators: allowed everything in every heaven.
const AdministratorsGroup = authorization.AdministratorsGroup

// isAdministrator says whether u is a server administrator.
var isAdministrator = authorization.IsAdministrator

// loopbackUser is who a heaven's own controllers act as.
var loopbackUser = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}

type loopbackKey struct{}

// withLoopback marks a request context as coming from inside the process.
func withLoopback(ctx context.Context) context.Context {
	return context.WithValue(ctx, loopbackKey{}, true)
}

func isLoopback(ctx context.Context) bool { v, _ := ctx.Value(loopbackKey{}).(bool); return v }

// front is the one HTTP handler of heaven-server: it authenticates, serves
// the root endpoints and routes /clusters/<name>/... to that heaven.
type front struct {
	heavens *heavens
	authn   authenticator.Request
	root    http.Handler // /healthz, /version, /metrics...
	// allHeavens serves /clusters/*/<path> to administrators.
	allHeavens func(w http.ResponseWriter, r *http.Request, path string)
	// public paths of root answer without credentials, as a kube-apiserver's
	// system:public-info-viewer role allows.
	public  map[string]bool
	metrics *metrics
	// fair shares request slots among heavens (nil: no limits).
	fair *fairQueue
	// heavenTokens, if set, authenticates a request to a heaven that authn
	// did not by a token that heaven issued (its ServiceAccounts').
	heavenTokens func(r *http.Request, heaven string) (*authenticator.Response, bool, error)
	// authorizeRoot decides who reaches heaven-server's own endpoints
	// (/metrics…) besides the public ones: the root heaven's authorizer
	// (administrators, and whom root's RBAC grants the path). nil: all.
	authorizeRoot func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	u := user.Info(loopbackUser)
	if !isLoopback(ctx) {
		resp, ok, err := f.authn.AuthenticateRequest(r)
		if name, isHeaven := heavenOf(r); !ok && isHeaven && f.heavenTokens != nil {
			resp, ok, err = f.heavenTokens(r, name)
		}
		switch {
		case ok:
			u = resp.User
		case f.public[r.URL.Path]:
			u = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
		default:
			if err != nil {
				klog.V(2).InfoS("Unauthorized request", "path", r.URL.Path, "err", err)
			}
			writeStatus(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
	}
	r = r.WithContext(request.WithUser(ctx, u))
	scope, scoped := scopeOf(u)

	if !strings.HasPrefix(r.URL.Path, ClustersPrefix) {
		if scoped && !f.public[r.URL.Path] {
			writeStatus(w, r, scope.forbidden(u, r))
			return
		}
		if !f.public[r.URL.Path] && f.authorizeRoot != nil {
			a := authorizer.AttributesRecord{User: u, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
			if decision, _, err := f.authorizeRoot(ctx, a); decision != authorizer.DecisionAllow {
				if err != nil {
					klog.V(2).InfoS("Authorizing a request to heaven-server's own endpoints", "path", r.URL.Path, "err", err)
				}
				writeStatus(w, r, apierrors.NewForbidden(schema.GroupResource{}, "", fmt.Errorf(
					"user %q cannot %s path %q: heaven-server's own endpoints are for server administrators and whom the %s heaven's RBAC grants the path",
					u.GetName(), a.Verb, r.URL.Path, RootHeaven)))
				return
			}
		}
		f.root.ServeHTTP(w, r)
		return
	}
	name := heavenName(r)
	if (name == AllHeavens || strings.EqualFold(name, "%2A")) && f.allHeavens != nil { // clients escape "*"
		if !isAdministrator(u) {
			writeStatus(w, r, apierrors.NewForbidden(schema.GroupResource{Group: "heaven.dev", Resource: "heavens"}, AllHeavens,
				fmt.Errorf("user %q: /clusters/* is for server administrators", u.GetName())))
			return
		}
		f.allHeavens(w, r, strings.TrimPrefix(r.URL.Path, ClustersPrefix+AllHeavens))
		return
	}
	if heaven, rev, isView, err := splitView(name); isView {
		if err != nil {
			writeStatus(w, r, apierrors.NewBadRequest(err.Error()))
			return
		}
		if !readVerbs[r.Method] {
			writeStatus(w, r, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure,
				Code: http.StatusMethodNotAllowed, Reason: metav1.StatusReasonMethodNotAllowed,
				Message: fmt.Sprintf("heaven %s as of revision %d is read-only: %s is not allowed (write to /clusters/%s)", heaven, rev, r.Method, heaven)}})
			return
		}
	} else if err := ValidateHeavenName(name); err != nil {
		writeStatus(w, r, apierrors.NewBadRequest(err.Error()))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, ClustersPrefix+name)
	if scoped && !scope.allows(name, path, r.URL.RawPath != "", r.Method, r.URL.Query()) {
		klog.V(2).InfoS("Forbidden request of a scoped user", "user", u.GetName(), "method", r.Method, "path", r.URL.Path)
		writeStatus(w, r, scope.forbidden(u, r))
		return
	}
	f.serveHeaven(w, r, name, path)
}

// heavenName is the heaven a request to /clusters/<name>/... names, as
// sent: an escaped "/" or "." in it is no name.
func heavenName(r *http.Request) string {
	sent := r.URL.EscapedPath()
	if strings.HasPrefix(r.RequestURI, ClustersPrefix) {
		// The request line itself: EscapedPath re-escapes a path whose
		// escapes are not canonical, and an escaped "/" would split.
		sent, _, _ = strings.Cut(r.RequestURI, "?")
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(sent, ClustersPrefix), "/")
	return name
}

// heavenOf is the valid heaven name a request is for (for a view, its
// heaven's), if any.
func heavenOf(r *http.Request) (string, bool) {
	if !strings.HasPrefix(r.URL.Path, ClustersPrefix) {
		return "", false
	}
	name := branchOf(heavenName(r))
	return name, ValidateHeavenName(name) == nil
}

// serveHeaven hands a request to the heaven's API server. Requests from
// outside count as use (an idle heaven is stopped) and wait until the heaven
// is ready; those of the heaven's own controllers do neither.
func (f *front) serveHeaven(w http.ResponseWriter, r *http.Request, name, path string) {
	external := !isLoopback(r.Context())
	began := time.Now()
	acquire := f.heavens.acquire
	if !external {
		// A heaven's own controllers never start it: after it stopped, their
		// last requests would start it again, forever.
		acquire = f.heavens.acquireRunning
	}
	srv, release, err := acquire(r.Context(), name, external, external)
	if err != nil {
		switch {
		case errors.Is(err, errUnknownHeaven):
			writeStatus(w, r, apierrors.NewNotFound(schema.GroupResource{Group: "heaven.dev", Resource: "heavens"}, name))
		case errors.Is(err, errFutureRevision):
			writeStatus(w, r, apierrors.NewNotFound(schema.GroupResource{Group: "heaven.dev", Resource: "heavens"}, name+": "+err.Error()))
		case errors.Is(err, errCreateForbidden):
			u, _ := request.UserFrom(r.Context())
			writeStatus(w, r, apierrors.NewForbidden(schema.GroupResource{Group: "heaven.dev", Resource: "heavens"}, name,
				fmt.Errorf("heaven %s does not exist, and %s: user %q may create it as a Heaven object in %s if %s's RBAC allows (kubectl heaven create %s)",
					name, errCreateForbidden, u.GetName(), RootHeaven, RootHeaven, name)))
		case r.Context().Err() != nil:
			// The client went away while the heaven started.
		default:
			writeStatus(w, r, apierrors.NewServiceUnavailable(err.Error()))
		}
		return
	}
	defer release()

	r2 := r.Clone(r.Context())
	if path == "" {
		path = "/"
	}
	r2.URL.Path = path
	r2.URL.RawPath = ""
	verb := r.Method
	if q := r.URL.Query().Get("watch"); q == "true" || q == "1" {
		verb = "WATCH"
	}
	if !external {
		if verb == "WATCH" && !impersonates(r) {
			srv.OwnWatchHandler().ServeHTTP(w, r2)
			return
		}
		srv.Handler().ServeHTTP(w, r2)
		return
	}
	if f.fair != nil && verb != "WATCH" {
		done, err := f.fair.acquire(r.Context(), name)
		if errors.Is(err, errTooManyRequests) {
			w.Header().Set("Retry-After", "1")
			writeStatus(w, r, apierrors.NewTooManyRequests(fmt.Sprintf("heaven %s has too many requests waiting: retry later", name), 1))
			return
		}
		if err != nil {
			return // the client went away
		}
		defer done()
	}
	rw := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	srv.Handler().ServeHTTP(responsewriter.WrapForHTTP1Or2(rw), r2)
	f.metrics.requests.WithLabelValues(name, verb, strconv.Itoa(rw.code)).Inc()
	if verb != "WATCH" {
		f.metrics.requestLatency.WithLabelValues(name, verb).Observe(time.Since(began).Seconds())
	}
}

// impersonates tells whether a request asks to act as someone else.
func impersonates(r *http.Request) bool {
	for k := range r.Header {
		if strings.HasPrefix(k, "Impersonate-") {
			return true
		}
	}
	return false
}

// writeStatus answers with a Kubernetes Status object.
func writeStatus(w http.ResponseWriter, _ *http.Request, err apierrors.APIStatus) {
	st := err.Status()
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	responsewriters.WriteRawJSON(int(st.Code), st, w)
}

// statusRecorder remembers the response code. It is wrapped with
// responsewriter.WrapForHTTP1Or2, which gives it the Flush, CloseNotify
// (and for HTTP/1, Hijack) of the writer it wraps, as the API server's
// watch handler needs.
type statusRecorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
