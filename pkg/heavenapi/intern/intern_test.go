package intern

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/server/mux"
)

type configMap struct{ Data map[string]string }
type secret struct{ Data map[string][]byte }

// container builds what an API server installs for two resources: the same
// paths, parameters and responses each time, in new objects. The routes'
// responses have the same codes and messages but each its own model, and
// their metadata the same keys but each its own kind, as upstream's do.
func container(t *testing.T, handle func(string) restful.RouteFunction) *restful.Container {
	t.Helper()
	ws := new(restful.WebService).Path("/api/v1")
	ok := map[int]string{200: "OK", 404: "Not Found", 409: "Conflict"}
	for _, r := range []struct {
		path, kind string
		model      any
	}{
		{"/namespaces/{namespace}/configmaps/{name}", "ConfigMap", &configMap{}},
		{"/namespaces/{namespace}/secrets/{id}", "Secret", &secret{}},
	} {
		rb := ws.GET(r.path).To(handle(r.path)).
			Param(ws.PathParameter("namespace", "object name and auth scope")).
			Param(ws.QueryParameter("pretty", "If 'true', then the output is pretty printed."))
		for code, message := range ok {
			rb = rb.Returns(code, message, r.model)
		}
		ws.Route(rb.Metadata("x-kubernetes-action", "get").Metadata("x-kubernetes-group-version-kind", r.kind))
	}
	c := restful.NewContainer()
	c.Add(ws)
	return c
}

func pathExpr(t *testing.T, r *restful.Route) uintptr {
	t.Helper()
	f, err := field(reflect.ValueOf(r).Elem(), "pathExpr")
	if err != nil {
		t.Fatal(err)
	}
	return f.Pointer()
}

func TestRoutesShareWhatIsEqual(t *testing.T) {
	var got []string
	handle := func(path string) restful.RouteFunction {
		return func(req *restful.Request, _ *restful.Response) {
			got = append(got, path+" "+req.PathParameter("namespace")+" "+req.PathParameter("name")+req.PathParameter("id"))
		}
	}
	a, b := container(t, handle), container(t, handle)
	for _, c := range []*restful.Container{a, b} {
		if err := Routes(c); err != nil {
			t.Fatalf("Routes: %v", err)
		}
	}
	ra, rb := a.RegisteredWebServices()[0].Routes(), b.RegisteredWebServices()[0].Routes()
	for i := range ra {
		if pathExpr(t, &ra[i]) != pathExpr(t, &rb[i]) {
			t.Errorf("%s: each container keeps its own compiled path", ra[i].Path)
		}
		if &ra[i].ParameterDocs[0] != &rb[i].ParameterDocs[0] {
			t.Errorf("%s: each container keeps its own parameters", ra[i].Path)
		}
		if reflect.ValueOf(ra[i].ResponseErrors).Pointer() != reflect.ValueOf(rb[i].ResponseErrors).Pointer() {
			t.Errorf("%s: each container keeps its own responses", ra[i].Path)
		}
		if reflect.ValueOf(ra[i].Metadata).Pointer() != reflect.ValueOf(rb[i].Metadata).Pointer() {
			t.Errorf("%s: each container keeps its own metadata", ra[i].Path)
		}
	}
	// Responses and metadata that differ stay apart.
	if reflect.ValueOf(ra[0].ResponseErrors).Pointer() == reflect.ValueOf(ra[1].ResponseErrors).Pointer() {
		t.Errorf("%s and %s share responses with different models", ra[0].Path, ra[1].Path)
	}
	if reflect.ValueOf(ra[0].Metadata).Pointer() == reflect.ValueOf(ra[1].Metadata).Pointer() {
		t.Errorf("%s and %s share different metadata", ra[0].Path, ra[1].Path)
	}
	// The two paths compile to the same expression but name their
	// variables differently: they must not share.
	if pathExpr(t, &ra[0]) == pathExpr(t, &ra[1]) {
		t.Errorf("%s and %s share a compiled path, and with it the names of its variables", ra[0].Path, ra[1].Path)
	}

	// Requests are dispatched as before.
	for _, c := range []*restful.Container{a, b} {
		for _, path := range []string{"/api/v1/namespaces/ns/configmaps/cm", "/api/v1/namespaces/ns/secrets/s"} {
			rec := httptest.NewRecorder()
			c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != http.StatusOK {
				t.Errorf("GET %s: %d", path, rec.Code)
			}
		}
	}
	want := []string{
		"/namespaces/{namespace}/configmaps/{name} ns cm", "/namespaces/{namespace}/secrets/{id} ns s",
		"/namespaces/{namespace}/configmaps/{name} ns cm", "/namespaces/{namespace}/secrets/{id} ns s",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("handled %q, want %q", got, want)
	}
}

func TestWebhooksShareTheirConditionCompiler(t *testing.T) {
	v, err := validating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	w := Webhooks{Err: func(err error) { errs = append(errs, err) }}
	w.Initialize(v)
	w.Initialize(m)
	if len(errs) > 0 {
		t.Fatalf("plugins keep their own compilers: %v", errs)
	}
	for _, hook := range []reflect.Value{reflect.ValueOf(v.Webhook), reflect.ValueOf(m.Webhook)} {
		f, err := field(hook.Elem(), "filterCompiler")
		if err != nil {
			t.Fatal(err)
		}
		if f.Interface() != webhookConditions() {
			t.Errorf("%s keeps its own compiler", hook.Type())
		}
	}
}

// BenchmarkRoutes is the cost of sharing one resource's routes, a part of
// a heaven's start.
func BenchmarkRoutes(b *testing.B) {
	t := &testing.T{}
	handle := func(string) restful.RouteFunction { return func(*restful.Request, *restful.Response) {} }
	for b.Loop() {
		b.StopTimer()
		c := container(t, handle)
		b.StartTimer()
		if err := Routes(c); err != nil {
			b.Fatal(err)
		}
	}
}

// Heavens start at once: their containers are shared concurrently (run with
// -race).
func TestRoutesConcurrently(t *testing.T) {
	handle := func(string) restful.RouteFunction { return func(*restful.Request, *restful.Response) {} }
	var containers []*restful.Container
	for range 4 {
		containers = append(containers, container(t, handle))
	}
	var wg sync.WaitGroup
	for _, c := range containers {
		wg.Go(func() {
			if err := Routes(c); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	first := containers[0].RegisteredWebServices()[0].Routes()
	for _, c := range containers[1:] {
		routes := c.RegisteredWebServices()[0].Routes()
		for i := range routes {
			if pathExpr(t, &routes[i]) != pathExpr(t, &first[i]) {
				t.Errorf("%s: not shared", routes[i].Path)
			}
		}
	}
}

func TestDropPathStacks(t *testing.T) {
	m := mux.NewPathRecorderMux("test")
	m.Handle("/a", http.NotFoundHandler())
	m.HandlePrefix("/b/", http.NotFoundHandler())
	if err := DropPathStacks(m); err != nil {
		t.Fatal(err)
	}
	stacks, err := field(reflect.ValueOf(m).Elem(), "pathStacks")
	if err != nil {
		t.Fatal(err)
	}
	got := stacks.Interface().(map[string]string)
	if len(got) != 2 {
		t.Errorf("%d paths kept, want 2 (%v)", len(got), got)
	}
	for path, stack := range got {
		if stack != droppedStack {
			t.Errorf("%s: stack kept (%d bytes)", path, len(stack))
		}
	}
	// The mux still serves and still takes registrations.
	m.Handle("/c", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/c", nil))
	if rec.Code != http.StatusTeapot {
		t.Errorf("GET /c: %d", rec.Code)
	}
}

// TestRoutesKeepTablesBounded starts "heavens" whose routes carry more
// distinct parameters under one key than a key keeps: the tables must not
// grow with each of them (they did: the routes' parameter lists were kept
// by keys made of unshared parameters' addresses, new at every start).
func TestRoutesKeepTablesBounded(t *testing.T) {
	build := func() *restful.Container {
		ws := new(restful.WebService).Path("/apis/example.com/v1")
		for i := range maxPerKey + 4 {
			ws.Route(ws.GET(fmt.Sprintf("/widgets%d", i)).To(func(*restful.Request, *restful.Response) {}).
				Param(ws.QueryParameter("limit", "how many").DefaultValue(strconv.Itoa(i))))
		}
		c := restful.NewContainer()
		c.Add(ws)
		return c
	}
	sizes := func() []int {
		var n []int
		for _, t := range []*table{&paths, &parameters, &docs, &responses, &metadata} {
			t.mu.Lock()
			kept := 0
			for _, values := range t.m {
				kept += len(values)
			}
			t.mu.Unlock()
			n = append(n, kept)
		}
		return n
	}
	var first []int
	for start := range 5 {
		if err := Routes(build()); err != nil {
			t.Fatalf("Routes: %v", err)
		}
		if start == 0 {
			first = sizes()
			continue
		}
		if got := sizes(); !reflect.DeepEqual(got, first) {
			t.Fatalf("start %d: tables keep %v values (paths, parameters, docs, responses, metadata), %v after the first", start, got, first)
		}
	}
}
