package heavenapi

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	restful "github.com/emicklei/go-restful/v3"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	historyv1alpha1 "github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/history"
)

// getDefinitions returns the OpenAPI definitions of every type a heaven
// serves: the built-in types and the apiextensions API, as OpenAPI v3
// (shared) or v2 (a new map per call) definitions.
func getDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	if r := ref(v3Probe); r.String() == v3ProbeRef {
		return sharedV3().defs
	}
	return newDefinitions(ref)
}

// newDefinitions are kube-apiserver's (every built-in type and the
// apiextensions API) and the history API's.
func newDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := kubeopenapi.GetOpenAPIDefinitions(ref)
	for name, def := range historyv1alpha1.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok { // apimachinery's types are kube's too
			defs[name] = def
		}
	}
	return defs
}

// Every heaven builds OpenAPI v3 models of its built-in types when it
// starts (k8s.io/apiserver's InstallAPIGroup, for server-side apply), from
// one set of definitions shared by every heaven: a set per heaven stayed
// reachable from what was built, about 2.3 MiB per running heaven.
//
// kube-openapi's v3 builder writes into the top-level extensions map of
// each definition it builds from (it adds the namer's extensions and
// deletes x-kubernetes-v2-schema), which two heavens starting at once
// cannot share. So the shared definitions have no top-level extensions:
// they move to the namer (v3Namer), which returns a new map per call, and
// the builder copies them into the schema it builds, as before.
var sharedV3 = sync.OnceValue(func() *v3Definitions {
	v := &v3Definitions{extensions: map[string]spec.Extensions{}}
	v.defs = newDefinitions(func(name string) spec.Ref {
		defName, _ := definitionNamer().GetDefinitionName(name)
		return spec.MustCreateRef(v3RefPrefix + common.EscapeJsonPointer(defName))
	})
	for name, def := range v.defs {
		if len(def.Schema.Extensions) > 0 {
			v.extensions[name] = def.Schema.Extensions
			def.Schema.Extensions = nil
			v.defs[name] = def
		}
	}
	return v
})

type v3Definitions struct {
	defs       map[string]common.OpenAPIDefinition
	extensions map[string]spec.Extensions // top-level, moved out of defs
}

const (
	v3RefPrefix = "#/components/schemas/"
	v3Probe     = "io.k8s.api.core.v1.ConfigMap"
	v3ProbeRef  = v3RefPrefix + v3Probe
)

// definitionNamer names the definitions after the types of every scheme a
// heaven serves; the same for every heaven.
var definitionNamer = sync.OnceValue(func() *openapinamer.DefinitionNamer {
	return openapinamer.NewDefinitionNamer(namerSchemes()...)
})

// namerSchemes are the schemes whose kinds the definitions stand for
// (x-kubernetes-group-version-kind), as in kube-apiserver.
func namerSchemes() []*runtime.Scheme {
	return []*runtime.Scheme{legacyscheme.Scheme, apiextensionsapiserver.Scheme, history.Scheme}
}

// v3Namer is the namer's GetDefinitionName with the definition's own
// top-level extensions added (see sharedV3), in a new map.
func v3Namer(name string) (string, spec.Extensions) {
	defName, gvk := definitionNamer().GetDefinitionName(name)
	own := sharedV3().extensions[name]
	if len(own) == 0 {
		return defName, gvk
	}
	ext := make(spec.Extensions, len(own)+len(gvk))
	for k, v := range own {
		ext[k] = v
	}
	for k, v := range gvk {
		ext[k] = v
	}
	return defName, ext
}

// openAPIV3Config is genericapiserver.DefaultOpenAPIV3Config over the
// shared definitions.
func openAPIV3Config() *common.OpenAPIV3Config {
	return &common.OpenAPIV3Config{
		IgnorePrefixes:        []string{},
		Info:                  &spec.Info{InfoProps: spec.InfoProps{Title: "Heaven"}},
		DefaultResponse:       &spec3.Response{ResponseProps: spec3.ResponseProps{Description: "Default Response."}},
		GetOperationIDAndTags: openapinamer.GetOperationIDAndTags,
		GetDefinitionName:     v3Namer,
		GetDefinitions:        getDefinitions,
		Definitions:           sharedV3().defs,
	}
}

// staticOpenAPI is what k8s.io/apiserver's PrepareRun builds from the
// server's routes: the v2 document and one v3 document per group version.
// Every heaven serves the same built-in types, so these are the same in
// every heaven: built once per process, they are shared. Built per heaven
// (as PrepareRun does) they cost about 5 MiB for each running heaven.
// Nothing modifies them once built (apiextensions merges CRD documents into
// copies), and they share nothing with other builds (getDefinitions).
type staticOpenAPI struct {
	v2        *spec.Swagger
	v3        map[string]*spec3.OpenAPI
	v3Service *handler3.OpenAPIService // serves v3
	// v3Paths is v3Service's discovery document, read once: every heaven's
	// /openapi/v3 lists these paths (and its CRDs').
	v3Paths map[string]handler3.OpenAPIV3DiscoveryGroupVersion
}

// openAPIV3Handler serves /openapi/v3 of one heaven: the shared documents
// of the built-in groups and the heaven's own of its CRDs, in one
// discovery document.
type openAPIV3Handler struct {
	shared       *handler3.OpenAPIService
	sharedGroups map[string]*spec3.OpenAPI
	sharedPaths  map[string]handler3.OpenAPIV3DiscoveryGroupVersion
	crds         *crdOpenAPIV3
}

func (h *openAPIV3Handler) groupVersion(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.sharedGroups[strings.TrimPrefix(r.URL.Path, "/openapi/v3/")]; ok {
		h.shared.HandleGroupVersion(w, r)
		return
	}
	h.crds.serveGroupVersion(w, r)
}

func (h *openAPIV3Handler) discovery(w http.ResponseWriter, r *http.Request) {
	// Asked every 5 seconds (the mutating admission policy plugin):
	// nothing here is built again but the CRDs' changed documents.
	merged := handler3.OpenAPIV3Discovery{Paths: maps.Clone(h.sharedPaths)}
	crds, err := h.crds.discovery()
	if err != nil {
		http.Error(w, "OpenAPI v3 discovery failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for path, u := range crds {
		if _, ok := merged.Paths[path]; !ok { // a built-in group's wins, as on its other paths
			merged.Paths[path] = u
		}
	}
	data, err := json.Marshal(merged)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Etag", strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(data))))
	w.Header().Set("Content-Type", "application/json")
	http.ServeContent(w, r, "/openapi/v3", time.Time{}, bytes.NewReader(data))
}

// capture is a ResponseWriter that keeps what is written.
type capture struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header {
	if c.header == nil {
		c.header = http.Header{}
	}
	return c.header
}
func (c *capture) WriteHeader(code int)        { c.code = code }
func (c *capture) Write(p []byte) (int, error) { return c.body.Write(p) }

var staticOpenAPIs struct {
	sync.Mutex
	byRoutes map[string]*staticOpenAPIBuild
}

// staticOpenAPIBuild is the one build of the documents for a set of routes:
// heavens that start at once wait for it rather than each building its own.
type staticOpenAPIBuild struct {
	once sync.Once
	docs *staticOpenAPI
	err  error
}

// installOpenAPI serves /openapi/v2 and /openapi/v3 on s from the shared
// documents for s's routes, building them on first use: what PrepareRun
// does when SkipOpenAPIInstallation is false. Call it before the server's
// post-start hooks run: apiextensions' CRD OpenAPI v2 controller starts
// from the fields it sets.
func installOpenAPI(s *genericapiserver.GenericAPIServer, v2 *common.Config, v3 *common.OpenAPIV3Config, crds listers.CustomResourceDefinitionLister) error {
	container := s.Handler.GoRestfulContainer
	key := routesKey(container.RegisteredWebServices())
	staticOpenAPIs.Lock()
	build, ok := staticOpenAPIs.byRoutes[key]
	if !ok {
		if staticOpenAPIs.byRoutes == nil {
			staticOpenAPIs.byRoutes = map[string]*staticOpenAPIBuild{}
		}
		build = &staticOpenAPIBuild{}
		staticOpenAPIs.byRoutes[key] = build
	}
	staticOpenAPIs.Unlock()
	build.once.Do(func() { build.docs, build.err = buildStaticOpenAPI(container, v2, v3) })
	if build.err != nil {
		staticOpenAPIs.Lock()
		if staticOpenAPIs.byRoutes[key] == build {
			delete(staticOpenAPIs.byRoutes, key) // the next heaven tries again
		}
		staticOpenAPIs.Unlock()
		return build.err
	}
	docs := build.docs

	mux := s.Handler.NonGoRestfulMux
	v2Service := handler.NewOpenAPIService(docs.v2)
	v2Service.RegisterOpenAPIVersionedService("/openapi/v2", mux)
	// The built-in groups' v3 documents are served by one service for
	// every heaven (it keeps each document's JSON, megabytes in all); the
	// CRDs' are built on request.
	v3Handler := &openAPIV3Handler{shared: docs.v3Service, sharedGroups: docs.v3, sharedPaths: docs.v3Paths, crds: newCRDOpenAPIV3(crds)}
	mux.Handle("/openapi/v3", http.HandlerFunc(v3Handler.discovery))
	mux.HandlePrefix("/openapi/v3/", http.HandlerFunc(v3Handler.groupVersion))
	// No OpenAPIV3VersionedService: apiextensions would run its
	// controller, which builds every CRD's document up front.
	s.OpenAPIVersionedService, s.StaticOpenAPISpec = v2Service, docs.v2
	return nil
}

// buildStaticOpenAPI builds the documents as k8s.io/apiserver's
// routes.OpenAPI installers do (they keep the v3 documents to themselves,
// and exit the process on an error).
func buildStaticOpenAPI(c *restful.Container, v2 *common.Config, v3 *common.OpenAPIV3Config) (*staticOpenAPI, error) {
	swagger, err := builder.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices(c.RegisteredWebServices()), v2)
	if err != nil {
		return nil, fmt.Errorf("OpenAPI v2 document: %w", err)
	}
	swagger.Definitions = handler.PruneDefaults(swagger.Definitions)
	docs := &staticOpenAPI{v2: swagger, v3: map[string]*spec3.OpenAPI{}}
	for _, ws := range c.RegisteredWebServices() {
		gv := strings.TrimPrefix(ws.RootPath(), "/")
		doc, err := builder3.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices([]*restful.WebService{ws}), v3)
		if err != nil {
			return nil, fmt.Errorf("OpenAPI v3 document of %s: %w", gv, err)
		}
		keepOwnGVKs(doc, gv)
		docs.v3[gv] = doc
	}
	docs.v3Service = handler3.NewOpenAPIService()
	for gv, doc := range docs.v3 {
		docs.v3Service.UpdateGroupVersion(gv, doc)
	}
	var d handler3.OpenAPIV3Discovery
	if err := serveJSON(docs.v3Service.HandleDiscovery, "/openapi/v3", &d); err != nil {
		return nil, fmt.Errorf("OpenAPI v3 discovery: %w", err)
	}
	docs.v3Paths = d.Paths
	return docs, nil
}

// gvkExtension lists the group/version/kinds a schema stands for.
const gvkExtension = "x-kubernetes-group-version-kind"

// keepOwnGVKs narrows, in the document of one group version (path
// "api/v1" or "apis/<group>/<version>"), the kinds of the types that every
// group registers (WatchEvent, DeleteOptions) to those of this group
// version and of core/v1: clients map a kind to its schema by that list, and
// in a per-group document the other groups' entries would be wrong.
func keepOwnGVKs(doc *spec3.OpenAPI, path string) {
	var group, version string
	switch parts := strings.Split(path, "/"); {
	case len(parts) == 2 && parts[0] == "api":
		version = parts[1]
	case len(parts) == 3 && parts[0] == "apis":
		group, version = parts[1], parts[2]
	default:
		return
	}
	if doc.Components == nil {
		return
	}
	for _, schema := range doc.Components.Schemas {
		if schema == nil {
			continue
		}
		gvks, _ := schema.Extensions[gvkExtension].([]interface{})
		if len(gvks) < 2 || !sharedKinds[gvkField(gvks[0], "kind")] {
			continue
		}
		var own []interface{}
		for _, gvk := range gvks {
			g, v := gvkField(gvk, "group"), gvkField(gvk, "version")
			if (g == group && v == version) || (g == "" && v == "v1") {
				own = append(own, gvk)
			}
		}
		if len(own) == 0 {
			delete(schema.Extensions, gvkExtension)
			continue
		}
		schema.Extensions[gvkExtension] = own
	}
}

// sharedKinds are the kinds registered in every group version.
var sharedKinds = map[string]bool{"WatchEvent": true, "DeleteOptions": true}

func gvkField(gvk interface{}, field string) string {
	m, _ := gvk.(map[string]interface{})
	s, _ := m[field].(string)
	return s
}

// routesKey identifies a set of web services by their paths and routes.
func routesKey(services []*restful.WebService) string {
	var paths []string
	for _, ws := range services {
		for _, r := range ws.Routes() {
			paths = append(paths, r.Method+" "+r.Path)
		}
	}
	slices.Sort(paths)
	return strings.Join(paths, "\n")
}
