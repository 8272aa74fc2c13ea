package heavenapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	listers "k8s.io/apiextensions-apiserver/pkg/client/listers/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	"k8s.io/apimachinery/pkg/labels"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
)

// crdOpenAPIV3 serves the OpenAPI v3 documents of a heaven's custom
// resources, built when they are asked for. apiextensions' own controller
// (openapiv3.Controller) builds and keeps every CRD's document as soon as the
// CRD is established, and the first look at /openapi/v3 (the mutating
// admission policy plugin looks every 5 seconds) marshals and keeps each
// group version's JSON as well: about 0.4 MiB per running heaven with a
// single small CRD, for documents few heavens are ever asked for.
//
// The documents are upstream's: the same builder and merge, served by
// kube-openapi's handler. Between requests a heaven keeps only each group
// version's address in the discovery document (its content hash), keyed by
// the resource versions of the CRDs it was built from.
type crdOpenAPIV3 struct {
	crds listers.CustomResourceDefinitionLister

	mu   sync.Mutex
	urls map[string]crdDocumentURL // by path, "apis/<group>/<version>"
}

// crdDocumentURL is the address of a group version's document, and what it
// was built from.
type crdDocumentURL struct {
	from   string // the CRDs' names and resource versions
	url    handler3.OpenAPIV3DiscoveryGroupVersion
	failed bool // no document could be built: not listed, not tried again until the CRDs change
}

func newCRDOpenAPIV3(crds listers.CustomResourceDefinitionLister) *crdOpenAPIV3 {
	return &crdOpenAPIV3{crds: crds, urls: map[string]crdDocumentURL{}}
}

// groupVersions returns the established CRDs that serve each group version,
// by document path, ordered by name.
func (c *crdOpenAPIV3) groupVersions() (map[string][]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := c.crds.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	slices.SortFunc(crds, func(a, b *apiextensionsv1.CustomResourceDefinition) int { return strings.Compare(a.Name, b.Name) })
	byPath := map[string][]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			continue
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				path := "apis/" + crd.Spec.Group + "/" + v.Name
				byPath[path] = append(byPath[path], crd)
			}
		}
	}
	return byPath, nil
}

// builtFrom identifies what a group version's document is built from.
func builtFrom(crds []*apiextensionsv1.CustomResourceDefinition) string {
	var b strings.Builder
	for _, crd := range crds {
		fmt.Fprintf(&b, "%s@%s,", crd.Name, crd.ResourceVersion)
	}
	return b.String()
}

// document builds the document of the group version at path from crds, as
// apiextensions' controller does: one per CRD, merged. A CRD whose document
// can't be built is left out, as there.
func document(path string, crds []*apiextensionsv1.CustomResourceDefinition) (*spec3.OpenAPI, error) {
	version := path[strings.LastIndex(path, "/")+1:]
	var specs []*spec3.OpenAPI
	for _, crd := range crds {
		doc, err := builder.BuildOpenAPIV3(crd, version, builder.Options{
			V2:                      false,
			IncludeSelectableFields: utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CustomResourceFieldSelectors),
		})
		if err != nil {
			klog.ErrorS(err, "No OpenAPI v3 document for a CRD", "crd", crd.Name, "version", version)
			continue
		}
		specs = append(specs, doc)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("no OpenAPI v3 document for %s", path)
	}
	return builder.MergeSpecsV3(specs...)
}

// service returns a kube-openapi service holding the documents of the
// given group versions.
func service(docs map[string]*spec3.OpenAPI) *handler3.OpenAPIService {
	s := handler3.NewOpenAPIService()
	for path, doc := range docs {
		s.UpdateGroupVersion(path, doc)
	}
	return s
}

// discovery returns the address of every group version's document, building
// again only the documents whose CRDs changed since their address was
// taken.
func (c *crdOpenAPIV3) discovery() (map[string]handler3.OpenAPIV3DiscoveryGroupVersion, error) {
	byPath, err := c.groupVersions()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]handler3.OpenAPIV3DiscoveryGroupVersion, len(byPath))
	changed := map[string]*spec3.OpenAPI{}
	changedFrom := map[string]string{}
	for path, crds := range byPath {
		from := builtFrom(crds)
		if u, ok := c.urls[path]; ok && u.from == from {
			if !u.failed {
				out[path] = u.url
			}
			continue
		}
		doc, err := document(path, crds)
		if err != nil {
			c.urls[path] = crdDocumentURL{from: from, failed: true}
			continue
		}
		changed[path], changedFrom[path] = doc, from
	}
	if len(changed) > 0 {
		// The addresses as kube-openapi's handler gives them (with the
		// hash of each document's JSON).
		var d handler3.OpenAPIV3Discovery
		if err := serveJSON(service(changed).HandleDiscovery, "/openapi/v3", &d); err != nil {
			return nil, err
		}
		for path := range changed {
			u, ok := d.Paths[path]
			if !ok {
				return nil, fmt.Errorf("OpenAPI v3 discovery lists no %s", path)
			}
			out[path] = u
			c.urls[path] = crdDocumentURL{from: changedFrom[path], url: u}
		}
	}
	for path := range c.urls {
		if _, ok := byPath[path]; !ok {
			delete(c.urls, path)
		}
	}
	return out, nil
}

// serveGroupVersion serves the document of the group version at
// /openapi/v3/<path>, built now, with kube-openapi's handler (content
// types, ETag, and a redirect for an outdated hash).
func (c *crdOpenAPIV3) serveGroupVersion(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/openapi/v3/")
	byPath, err := c.groupVersions()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	doc, err := document(path, byPath[path])
	if err != nil {
		http.NotFound(w, r)
		return
	}
	service(map[string]*spec3.OpenAPI{path: doc}).HandleGroupVersion(w, r)
}

// serveJSON calls an http.HandlerFunc for a GET of path and decodes its
// JSON answer into v.
func serveJSON(h http.HandlerFunc, path string, v any) error {
	var c capture
	req, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	h(&c, req)
	if c.code != 0 && c.code != http.StatusOK {
		return fmt.Errorf("GET %s: %d", path, c.code)
	}
	return json.Unmarshal(c.body.Bytes(), v)
}
