package heavenapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	clientv3 "go.etcd.io/etcd/client/v3"
	clientv3k "go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/authentication/user"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/compatibility"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	builtin "github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
)

// TestOpenAPIMatchesUpstream checks that the OpenAPI documents heavens serve
// from the shared definitions and the shared static documents are exactly
// those k8s.io/apiserver's own installers (routes.OpenAPI, as PrepareRun
// uses them) build from fresh configurations over the same routes, for two
// heavens built at once (run with -race: they share definitions), and for
// one built by New.
func TestOpenAPIMatchesUpstream(t *testing.T) {
	clients := startGitStore(t)
	staticOpenAPIs.Lock()
	staticOpenAPIs.byRoutes = nil // what the heavens below share, built by them
	staticOpenAPIs.Unlock()

	// Two heavens built at once, as heaven-server starts them.
	names := []string{"alpha", "beta"}
	servers := make([]*genericapiserver.GenericAPIServer, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { servers[i], errs[i] = newTestHeaven(testConfig(name, clients)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("heaven %s: %v", names[i], err)
		}
		t.Cleanup(servers[i].Destroy)
	}
	if servers[0].StaticOpenAPISpec == nil {
		t.Fatal("no OpenAPI v2 document installed")
	}
	if servers[0].StaticOpenAPISpec != servers[1].StaticOpenAPISpec {
		t.Errorf("heavens %s and %s built at once serve OpenAPI v2 documents of their own (%p, %p), not one shared document",
			names[0], names[1], servers[0].StaticOpenAPISpec, servers[1].StaticOpenAPISpec)
	}

	// The reference: upstream's installers over the first heaven's routes,
	// with configurations that share nothing with the heavens'.
	container := servers[0].Handler.GoRestfulContainer
	reference := mux.NewPathRecorderMux("reference")
	refV2, refV3 := referenceConfigs()
	routes.OpenAPI{Config: refV2}.InstallV2(container, reference)
	routes.OpenAPI{V3Config: refV3}.InstallV3(container, reference)
	want := fetchOpenAPI(t, "reference", reference)
	if len(want.v3) < 5 {
		t.Fatalf("reference serves only %d OpenAPI v3 group versions", len(want.v3))
	}

	got := make([]served, len(servers))
	for i, s := range servers {
		if !slices.Equal(routeList(s.Handler.GoRestfulContainer), routeList(container)) {
			t.Fatalf("heaven %s has other routes than heaven %s", names[i], names[0])
		}
		got[i] = fetchOpenAPI(t, names[i], asUser(s.Handler))
		compareOpenAPI(t, names[i], want, got[i])
	}

	// New itself (the heavens above follow its steps): it shares what they
	// built and serves the same.
	srv, err := New(testConfig("gamma", clients))
	if err != nil {
		t.Fatal(err)
	}
	compareOpenAPI(t, "gamma (New)", want, fetchOpenAPI(t, "gamma", asUser(srv.Handler())))
	staticOpenAPIs.Lock()
	cached := len(staticOpenAPIs.byRoutes)
	staticOpenAPIs.Unlock()
	if cached != 1 {
		t.Errorf("%d sets of static OpenAPI documents cached, want 1", cached)
	}

	t.Run("group-version-kinds in apps/v1", func(t *testing.T) {
		doc := got[0].v3["apis/apps/v1"]
		if doc == nil {
			t.Fatal("no OpenAPI v3 document for apis/apps/v1")
		}
		schemas, _ := lookup(doc, "components", "schemas").(map[string]interface{})
		deployment := lookup(schemas, "io.k8s.api.apps.v1.Deployment", gvkExtension)
		wantGVK := []interface{}{map[string]interface{}{"group": "apps", "version": "v1", "kind": "Deployment"}}
		if !reflect.DeepEqual(deployment, wantGVK) {
			t.Errorf("Deployment's %s = %v, want %v", gvkExtension, deployment, wantGVK)
		}
		deleteOptions, _ := lookup(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions", gvkExtension).([]interface{})
		seen := map[string]bool{}
		for _, gvk := range deleteOptions {
			gv := gvkField(gvk, "group") + "/" + gvkField(gvk, "version")
			if gv != "apps/v1" && gv != "/v1" {
				t.Errorf("DeleteOptions in apis/apps/v1 lists %v", gvk)
			}
			seen[gv] = true
		}
		if !seen["apps/v1"] || !seen["/v1"] {
			t.Errorf("DeleteOptions in apis/apps/v1 lists %v, want apps/v1 and v1", deleteOptions)
		}
	})

	t.Run("server-side apply models", func(t *testing.T) {
		// InstallAPIGroup builds its type converter with the heaven's v3
		// configuration (shared definitions, v3Namer); upstream's would be
		// DefaultOpenAPIV3Config's.
		kinds := kindDefinitionNames()
		models, err := builder3.BuildOpenAPIDefinitionsForResources(openAPIV3Config(), kinds...)
		if err != nil {
			t.Fatal(err)
		}
		_, refV3 := referenceConfigs()
		refModels, err := builder3.BuildOpenAPIDefinitionsForResources(refV3, kinds...)
		if err != nil {
			t.Fatal(err)
		}
		compareJSON(t, "models of "+fmt.Sprint(len(kinds))+" kinds", toJSON(t, refModels), toJSON(t, models))

		deployment := lookup(toJSON(t, models), "io.k8s.api.apps.v1.Deployment", gvkExtension)
		wantGVK := []interface{}{map[string]interface{}{"group": "apps", "version": "v1", "kind": "Deployment"}}
		if !reflect.DeepEqual(deployment, wantGVK) {
			t.Errorf("Deployment model's %s = %v, want %v", gvkExtension, deployment, wantGVK)
		}
		tc, err := managedfields.NewTypeConverter(models, false)
		if err != nil {
			t.Fatal(err)
		}
		obj := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "web"}}
		if _, err := tc.ObjectToTyped(obj); err != nil {
			t.Errorf("no server-side apply model of apps/v1 Deployment: %v", err)
		}
	})

	t.Run("shared definitions unchanged", func(t *testing.T) {
		// What the heavens built must have left the shared definitions as
		// they were made (a write the race detector would miss when
		// heavens do not overlap).
		fresh := newDefinitions(func(name string) spec.Ref {
			defName, _ := definitionNamer().GetDefinitionName(name)
			return spec.MustCreateRef(v3RefPrefix + common.EscapeJsonPointer(defName))
		})
		shared := sharedV3()
		if len(fresh) != len(shared.defs) {
			t.Fatalf("%d shared definitions, want %d", len(shared.defs), len(fresh))
		}
		for name, def := range fresh {
			if !reflect.DeepEqual(shared.extensions[name], def.Schema.Extensions) && (len(def.Schema.Extensions) > 0 || len(shared.extensions[name]) > 0) {
				t.Errorf("top-level extensions of %s changed: %v, want %v", name, shared.extensions[name], def.Schema.Extensions)
			}
			def.Schema.Extensions = nil
			if !reflect.DeepEqual(shared.defs[name], def) {
				t.Errorf("shared definition %s changed", name)
			}
		}
	})
}

// newTestHeaven builds a heaven's generic server as New does.
func newTestHeaven(c Config) (*genericapiserver.GenericAPIServer, error) {
	b, err := c.build()
	if err != nil {
		return nil, err
	}
	return b.server, nil
}

func testConfig(name string, clients storage.Clients) Config {
	return Config{
		Name:    name,
		Clients: clients,
		// Built, never used: the servers are not started.
		Loopback:        &rest.Config{Host: "http://heaven-loopback.invalid/clusters/" + name},
		ExternalAddress: "127.0.0.1:6443",
	}
}

// referenceConfigs are the configurations PrepareRun would get from a
// heaven before shared definitions: k8s.io/apiserver's defaults over new
// definitions and a new namer of the same schemes, completed as
// genericConfig's are (Complete sets info.version).
func referenceConfigs() (*common.Config, *common.OpenAPIV3Config) {
	namer := openapinamer.NewDefinitionNamer(namerSchemes()...)
	c := genericapiserver.NewConfig(apiextensionsapiserver.Codecs)
	c.EffectiveVersion = compatibility.NewEffectiveVersionFromString(builtin.KubernetesVersion, "", "")
	c.ExternalAddress = "127.0.0.1:6443"
	c.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(newDefinitions, namer)
	c.OpenAPIConfig.Info.Title = "Heaven"
	c.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(newDefinitions, namer)
	c.OpenAPIV3Config.Info.Title = "Heaven"
	c.Complete(nil)
	return c.OpenAPIConfig, c.OpenAPIV3Config
}

// kindDefinitionNames are the definitions that stand for a kind.
func kindDefinitionNames() []string {
	var names []string
	for name := range newDefinitions(func(string) spec.Ref { return spec.Ref{} }) {
		if _, ext := definitionNamer().GetDefinitionName(name); ext[gvkExtension] != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// served is what a server serves under /openapi, as JSON values.
type served struct {
	v2        interface{}
	discovery interface{}
	v3        map[string]interface{} // by group version path
}

// fetchOpenAPI reads /openapi/v2, /openapi/v3 and every group version's
// document the discovery document lists.
func fetchOpenAPI(t *testing.T, name string, h http.Handler) served {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := served{v2: getJSON(t, srv.URL+"/openapi/v2"), discovery: getJSON(t, srv.URL+"/openapi/v3"), v3: map[string]interface{}{}}
	paths, _ := lookup(s.discovery, "paths").(map[string]interface{})
	if len(paths) == 0 {
		t.Fatalf("%s: /openapi/v3 lists no group versions", name)
	}
	for gv, entry := range paths {
		u, _ := lookup(entry, "serverRelativeURL").(string)
		if !strings.HasPrefix(u, "/openapi/v3/"+gv+"?hash=") {
			t.Fatalf("%s: /openapi/v3 lists %s at %q", name, gv, u)
		}
		s.v3[gv] = getJSON(t, srv.URL+u)
	}
	return s
}

func getJSON(t *testing.T, url string) interface{} {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %s, %s: %.200s", url, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var v interface{}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return v
}

func compareOpenAPI(t *testing.T, name string, want, got served) {
	t.Helper()
	compareJSON(t, name+": /openapi/v2", want.v2, got.v2)
	compareJSON(t, name+": /openapi/v3", want.discovery, got.discovery)
	for _, gv := range sortedKeys(want.v3, got.v3) {
		compareJSON(t, name+": /openapi/v3/"+gv, want.v3[gv], got.v3[gv])
	}
}

func compareJSON(t *testing.T, what string, want, got interface{}) {
	t.Helper()
	if reflect.DeepEqual(want, got) {
		return
	}
	var diffs []string
	jsonDiff("", want, got, &diffs)
	const shown = 15
	more := ""
	if len(diffs) > shown {
		more = fmt.Sprintf("\n  ... and %d more", len(diffs)-shown)
		diffs = diffs[:shown]
	}
	t.Errorf("%s differs from upstream's (want = upstream, got = heaven):\n  %s%s", what, strings.Join(diffs, "\n  "), more)
}

// jsonDiff lists where two JSON values differ, by JSON pointer.
func jsonDiff(path string, want, got interface{}, out *[]string) {
	switch w := want.(type) {
	case map[string]interface{}:
		g, ok := got.(map[string]interface{})
		if !ok {
			break
		}
		for _, k := range sortedKeys(w, g) {
			p := path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			wv, inW := w[k]
			gv, inG := g[k]
			switch {
			case !inG:
				*out = append(*out, fmt.Sprintf("%s: missing, want %s", p, short(wv)))
			case !inW:
				*out = append(*out, fmt.Sprintf("%s: unexpected %s", p, short(gv)))
			default:
				jsonDiff(p, wv, gv, out)
			}
		}
		return
	case []interface{}:
		g, ok := got.([]interface{})
		if !ok || len(g) != len(w) {
			break
		}
		for i := range w {
			jsonDiff(fmt.Sprintf("%s/%d", path, i), w[i], g[i], out)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*out = append(*out, fmt.Sprintf("%s: got %s, want %s", path, short(got), short(want)))
	}
}

func short(v interface{}) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func sortedKeys[V any](maps ...map[string]V) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func lookup(v interface{}, path ...string) interface{} {
	for _, k := range path {
		m, _ := v.(map[string]interface{})
		v = m[k]
	}
	return v
}

func toJSON(t *testing.T, v interface{}) interface{} {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func routeList(c *restful.Container) []string {
	return strings.Split(routesKey(c.RegisteredWebServices()), "\n")
}

// asUser serves h as heaven-server's front does: the user is already known.
func asUser(h http.Handler) http.Handler {
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), admin)))
	})
}

// startGitStore serves a new git store through its etcd v3 facade in
// process, as heaven-server does, for both of the heavens' clients.
func startGitStore(t *testing.T) storage.Clients {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "heavens.git")
	repo, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	facade, err := etcdv3.NewServer(repo, etcdv3.Config{RepositoryPath: dir})
	if err != nil {
		_ = repo.Close()
		t.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	served := make(chan error, 1)
	go func() { served <- facade.Serve(lis) }()
	client, err := clientv3k.New(clientv3.Config{
		Endpoints:   []string{"heaven-store:0"},
		DialTimeout: 10 * time.Second,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) })},
		Logger:      zap.NewNop(),
	})
	t.Cleanup(func() {
		if client != nil {
			_ = client.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := facade.Shutdown(ctx); err != nil {
			t.Errorf("stopping the git store's facade: %v", err)
		}
		<-served
		if err := repo.Close(); err != nil {
			t.Errorf("closing the git store: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return storage.Clients{Git: client, Ephemeral: client}
}
