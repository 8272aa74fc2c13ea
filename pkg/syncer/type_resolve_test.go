package syncer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// fakeAPI is the discovery (and OpenAPI v3) of one side, served over
// HTTP to a real discovery client; it counts the requests of each path.
type fakeAPI struct {
	groups  []apiGroup        // the first version of a group is preferred
	openAPI map[string]string // "<group>/<version>": document
	failing map[string]bool   // paths answered with 500

	mu       sync.Mutex
	requests map[string]int
}

type apiGroup struct {
	name     string // "" for the core group
	versions []apiVersion
}

type apiVersion struct {
	version   string
	resources []metav1.APIResource
}

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// resource is a namespaced resource with every verb; status adds its
// status subresource.
func resource(name, kind string, status bool) []metav1.APIResource {
	out := []metav1.APIResource{{Name: name, SingularName: strings.TrimSuffix(name, "s"), Kind: kind, Namespaced: true, Verbs: allVerbs}}
	if status {
		out = append(out, metav1.APIResource{Name: name + "/status", Kind: kind, Namespaced: true, Verbs: []string{"get", "patch", "update"}})
	}
	return out
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.requests[r.URL.Path]++
	failing := a.failing[r.URL.Path]
	a.mu.Unlock()
	if failing {
		http.Error(w, "broken", http.StatusInternalServerError)
		return
	}
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range a.groups {
		if g.name == "" {
			if r.URL.Path == "/api" {
				reply(&metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
				return
			}
			if r.URL.Path == "/api/v1" {
				reply(&metav1.APIResourceList{GroupVersion: "v1", APIResources: g.versions[0].resources})
				return
			}
			continue
		}
		group := metav1.APIGroup{Name: g.name}
		for _, v := range g.versions {
			gv := metav1.GroupVersionForDiscovery{GroupVersion: g.name + "/" + v.version, Version: v.version}
			group.Versions = append(group.Versions, gv)
			if r.URL.Path == "/apis/"+gv.GroupVersion {
				reply(&metav1.APIResourceList{GroupVersion: gv.GroupVersion, APIResources: v.resources})
				return
			}
		}
		group.PreferredVersion = group.Versions[0]
		groups.Groups = append(groups.Groups, group)
	}
	switch {
	case r.URL.Path == "/apis":
		reply(groups)
	case r.URL.Path == "/api":
		reply(&metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}})
	case strings.HasPrefix(r.URL.Path, "/openapi/v3/apis/") && a.openAPI[strings.TrimPrefix(r.URL.Path, "/openapi/v3/apis/")] != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(a.openAPI[strings.TrimPrefix(r.URL.Path, "/openapi/v3/apis/")]))
	default:
		http.NotFound(w, r)
	}
}

func (a *fakeAPI) requestsOf(path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests[path]
}

// typeSide is one side of a type resolution: its API and its CRDs.
type typeSide struct {
	api  *fakeAPI
	crds []*apiextensionsv1.CustomResourceDefinition
}

// typeFixture is a syncer (team-a's of target east) with real discovery
// clients of both fake APIs and fake CRD clients.
type typeFixture struct {
	s        *Syncer
	up, down *fakeAPI
	upCRDs   *apiextensionsfake.Clientset
}

func newTypeFixture(t *testing.T, up, down typeSide) *typeFixture {
	t.Helper()
	side := func(ts typeSide) (sides, *apiextensionsfake.Clientset) {
		ts.api.requests = map[string]int{}
		srv := httptest.NewServer(ts.api)
		t.Cleanup(srv.Close)
		var objs []runtime.Object
		for _, crd := range ts.crds {
			objs = append(objs, crd)
		}
		crds := apiextensionsfake.NewSimpleClientset(objs...)
		return sides{discovery: discovery.NewDiscoveryClientForConfigOrDie(&rest.Config{Host: srv.URL}), crds: crds}, crds
	}
	f := &typeFixture{up: up.api, down: down.api}
	upSides, upCRDs := side(up)
	downSides, _ := side(down)
	f.upCRDs = upCRDs
	f.s = &Syncer{id: identity{heaven: "team-a", target: "east"}, up: upSides, down: downSides,
		openAPIRefreshed: map[schema.GroupResource]bool{}}
	return f
}

// resolve resolves gr against fresh discovery snapshots of both sides.
func (f *typeFixture) resolve(t *testing.T, gr schema.GroupResource) (*typeInfo, v1alpha1.ResourceSyncStatus) {
	t.Helper()
	down, err := newDiscoverySnapshot(t.Context(), f.s.down.discovery)
	require.NoError(t, err)
	up, err := newDiscoverySnapshot(t.Context(), f.s.up.discovery)
	require.NoError(t, err)
	return f.s.resolveType(t.Context(), gr, down, up)
}

func (f *typeFixture) upCRD(t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd, err := f.upCRDs.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return crd
}

// APIs of the tests.

func core(resources ...[]metav1.APIResource) apiGroup {
	return apiGroup{name: "", versions: []apiVersion{{version: "v1", resources: concat(resources)}}}
}

func group(name, version string, resources ...[]metav1.APIResource) apiGroup {
	return apiGroup{name: name, versions: []apiVersion{{version: version, resources: concat(resources)}}}
}

func concat(lists [][]metav1.APIResource) []metav1.APIResource {
	var out []metav1.APIResource
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// widgetCRDOf is a CRD of widgets.example.com (v1, namespaced, with
// status), as the cluster has it.
func widgetCRDOf() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com", Annotations: map[string]string{"owner": "cluster-admin"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"}}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object"}},
				}},
			}},
		},
	}
}

func TestResolveType(t *testing.T) {
	var (
		configmaps = schema.GroupResource{Resource: "configmaps"}
		pods       = schema.GroupResource{Resource: "pods"}
		nodes      = schema.GroupResource{Resource: "nodes"}
		widgets    = schema.GroupResource{Group: "example.com", Resource: "widgets"}
		gadgets    = schema.GroupResource{Group: "gadgets.example.io", Resource: "gadgets"}
		ingresses  = schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}
		deployment = schema.GroupResource{Group: "apps", Resource: "deployments"}
	)
	clusterCore := core(resource("configmaps", "ConfigMap", false), resource("pods", "Pod", true),
		[]metav1.APIResource{{Name: "nodes", Kind: "Node", Namespaced: false, Verbs: allVerbs}})
	heavenCore := core(resource("configmaps", "ConfigMap", false))
	for _, tc := range []struct {
		name     string
		gr       schema.GroupResource
		up, down typeSide
		want     v1alpha1.ResourceSyncStatus // Resource is filled in
		// info is the type to sync now, nil when there is none.
		info *typeInfo
		// check looks at what the resolution left behind.
		check func(t *testing.T, f *typeFixture)
	}{{
		name: "a type both serve is synced with the heaven's own",
		gr:   configmaps,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{clusterCore}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceSynced, Source: v1alpha1.TypeSourceHeaven, Version: "v1", Kind: "ConfigMap"},
		info: &typeInfo{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap", source: v1alpha1.TypeSourceHeaven},
	}, {
		name: "the heaven's status subresource is used when it has one",
		gr:   deployment,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{group("apps", "v1", resource("deployments", "Deployment", true))}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("apps", "v1", resource("deployments", "Deployment", true))}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceSynced, Source: v1alpha1.TypeSourceHeaven, Version: "v1", Kind: "Deployment"},
		info: &typeInfo{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, kind: "Deployment", hasStatus: true, source: v1alpha1.TypeSourceHeaven},
	}, {
		name: "a group the cluster does not serve",
		gr:   widgets,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{clusterCore}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "NotInCluster"},
	}, {
		name: "a resource the cluster's group does not have",
		gr:   schema.GroupResource{Group: "example.com", Resource: "gizmos"},
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("example.com", "v1", resource("widgets", "Widget", true))}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "NotInCluster"},
	}, {
		name: "cluster-scoped resources are not synced",
		gr:   nodes,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{clusterCore}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "ClusterScoped", Version: "v1", Kind: "Node"},
	}, {
		name: "a resource the syncer could not watch",
		gr:   schema.GroupResource{Group: "example.com", Resource: "widgets"},
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("example.com", "v1",
			[]metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: []string{"get", "list", "create"}}})}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "UnsupportedVerbs", Version: "v1", Kind: "Widget"},
	}, {
		name: "the heaven serves it cluster-scoped",
		gr:   configmaps,
		up: typeSide{api: &fakeAPI{groups: []apiGroup{core(
			[]metav1.APIResource{{Name: "configmaps", Kind: "ConfigMap", Namespaced: false, Verbs: allVerbs}})}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{clusterCore}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "ScopeMismatch", Version: "v1", Kind: "ConfigMap"},
	}, {
		name: "the heaven serves it as another kind",
		gr:   configmaps,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{core(resource("configmaps", "Settings", false))}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{clusterCore}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "KindMismatch", Version: "v1", Kind: "ConfigMap"},
	}, {
		name: "a type of a group without a dot cannot be taught",
		gr:   pods,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{clusterCore}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "NotServedByHeaven", Version: "v1", Kind: "Pod"},
	}, {
		name: "a group the heaven serves itself cannot get a CRD",
		gr:   ingresses,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{group("networking.k8s.io", "v1", resource("networkpolicies", "NetworkPolicy", false))}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("networking.k8s.io", "v1", resource("ingresses", "Ingress", true))}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "GroupServedNatively", Version: "v1", Kind: "Ingress"},
		check: func(t *testing.T, f *typeFixture) {
			list, err := f.upCRDs.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			assert.Empty(t, list.Items, "no CRD made")
		},
	}, {
		name: "the cluster's CRD is copied into the heaven",
		gr:   widgets,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("example.com", "v1", resource("widgets", "Widget", true))}},
			crds: []*apiextensionsv1.CustomResourceDefinition{widgetCRDOf()}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourcePending, Reason: "WaitingForCRD", Source: v1alpha1.TypeSourceCRD, Version: "v1", Kind: "Widget"},
		check: func(t *testing.T, f *typeFixture) {
			crd := f.upCRD(t, "widgets.example.com")
			want := widgetCRDOf().Spec
			want.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
			assert.Equal(t, want, crd.Spec, "the cluster's spec without its conversion webhook")
			assert.Equal(t, map[string]string{SyncTargetLabel: "east"}, crd.Labels)
			assert.Equal(t, string(v1alpha1.TypeSourceCRD), crd.Annotations[CRDSourceAnnotation])
			assert.Equal(t, hashJSON(crd.Spec), crd.Annotations[CRDHashAnnotation])
			assert.NotContains(t, crd.Annotations, "owner", "the cluster's annotations stay there")
		},
	}, {
		name: "a built-in type of a dotted group is taught from the cluster's OpenAPI",
		gr:   gadgets,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("gadgets.example.io", "v1", resource("gadgets", "Gadget", true))},
			openAPI: map[string]string{"gadgets.example.io/v1": gadgetOpenAPI}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourcePending, Reason: "WaitingForCRD", Source: v1alpha1.TypeSourceOpenAPI, Version: "v1", Kind: "Gadget"},
		check: func(t *testing.T, f *typeFixture) {
			crd := f.upCRD(t, "gadgets.gadgets.example.io")
			assert.Equal(t, apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"}, crd.Spec.Names)
			assert.Equal(t, apiextensionsv1.NamespaceScoped, crd.Spec.Scope)
			require.Len(t, crd.Spec.Versions, 1)
			assert.NotNil(t, crd.Spec.Versions[0].Subresources.Status, "the cluster's type has status")
			assert.Contains(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties, "spec")
			assert.Equal(t, string(v1alpha1.TypeSourceOpenAPI), crd.Annotations[CRDSourceAnnotation])
			assert.NotContains(t, crd.Annotations, apiApprovedAnnotation, "only *.k8s.io and *.kubernetes.io groups need it")
			requireValidCRD(t, gadgetGVK, crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
		},
	}, {
		name: "a CRD in a *.k8s.io group is marked approved, as such CRDs must be",
		gr:   schema.GroupResource{Group: "gadgets.k8s.io", Resource: "gadgets"},
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("gadgets.k8s.io", "v1", resource("gadgets", "Gadget", true))},
			openAPI: map[string]string{"gadgets.k8s.io/v1": strings.ReplaceAll(gadgetOpenAPI, "gadgets.example.io", "gadgets.k8s.io")}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourcePending, Reason: "WaitingForCRD", Source: v1alpha1.TypeSourceOpenAPI, Version: "v1", Kind: "Gadget"},
		check: func(t *testing.T, f *typeFixture) {
			crd := f.upCRD(t, "gadgets.gadgets.k8s.io")
			assert.Contains(t, crd.Annotations[apiApprovedAnnotation], "unapproved")
		},
	}, {
		name: "without OpenAPI there is no schema",
		gr:   gadgets,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("gadgets.example.io", "v1", resource("gadgets", "Gadget", true))}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "SchemaUnavailable", Version: "v1", Kind: "Gadget"},
	}, {
		name: "someone else's CRD of the same name in the heaven is left alone",
		gr:   widgets,
		up: typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}},
			crds: []*apiextensionsv1.CustomResourceDefinition{{ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"}}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("example.com", "v1", resource("widgets", "Widget", true))}},
			crds: []*apiextensionsv1.CustomResourceDefinition{widgetCRDOf()}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "CRDRejected", Source: v1alpha1.TypeSourceCRD, Version: "v1", Kind: "Widget"},
		check: func(t *testing.T, f *typeFixture) {
			assert.Empty(t, f.upCRD(t, "widgets.example.com").Annotations, "untouched")
		},
	}, {
		name: "a cluster that fails discovery",
		gr:   widgets,
		up:   typeSide{api: &fakeAPI{groups: []apiGroup{heavenCore}}},
		down: typeSide{api: &fakeAPI{groups: []apiGroup{group("example.com", "v1", resource("widgets", "Widget", true))},
			failing: map[string]bool{"/apis/example.com/v1": true}}},
		want: v1alpha1.ResourceSyncStatus{State: v1alpha1.ResourceNotSynced, Reason: "DiscoveryFailed"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTypeFixture(t, tc.up, tc.down)
			info, st := f.resolve(t, tc.gr)
			want := tc.want
			want.Resource = tc.gr.String()
			if st.State != v1alpha1.ResourceSynced {
				assert.NotEmpty(t, st.Message, "a state other than Synced says why")
			}
			st.Message = ""
			assert.Equal(t, want, st)
			assert.Equal(t, tc.info, info)
			if tc.check != nil {
				tc.check(t, f)
			}
		})
	}
}

// TestResolveTypeKeepsTheCopiedCRDUpToDate: once the heaven serves the
// syncer's copy of a CRD, the type is synced (its source still CRD) and
// the copy follows the cluster's CRD.
func TestResolveTypeKeepsTheCopiedCRDUpToDate(t *testing.T) {
	widgets := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	served := typeSide{api: &fakeAPI{groups: []apiGroup{group("example.com", "v1", resource("widgets", "Widget", true))}}}
	clusterCRD := widgetCRDOf()
	clusterCRD.Spec.Names.ShortNames = []string{"wd"} // changed since the copy
	s := &Syncer{id: identity{heaven: "team-a", target: "east"}}
	copied := s.copiedCRD(widgetCRDOf())
	served.crds = []*apiextensionsv1.CustomResourceDefinition{copied}

	f := newTypeFixture(t, served, typeSide{api: served.api, crds: []*apiextensionsv1.CustomResourceDefinition{clusterCRD}})
	info, st := f.resolve(t, widgets)
	assert.Equal(t, v1alpha1.ResourceSynced, st.State, st.Message)
	assert.Equal(t, v1alpha1.TypeSourceCRD, st.Source)
	require.NotNil(t, info)
	assert.Equal(t, typeInfo{gvr: widgets.WithVersion("v1"), kind: "Widget", hasStatus: true, source: v1alpha1.TypeSourceCRD}, *info)
	crd := f.upCRD(t, "widgets.example.com")
	assert.Equal(t, []string{"wd"}, crd.Spec.Names.ShortNames, "the copy follows the cluster's CRD")
	assert.Equal(t, hashJSON(crd.Spec), crd.Annotations[CRDHashAnnotation])
}

// TestResolveTypeRefreshesAnOpenAPICRDOncePerRun: the OpenAPI document is
// large and built-in types change only with an upgrade of the cluster:
// the syncer rebuilds such a CRD once per run, not on every resolution.
func TestResolveTypeRefreshesAnOpenAPICRDOncePerRun(t *testing.T) {
	gadgets := schema.GroupResource{Group: "gadgets.example.io", Resource: "gadgets"}
	api := &fakeAPI{groups: []apiGroup{group("gadgets.example.io", "v1", resource("gadgets", "Gadget", true))},
		openAPI: map[string]string{"gadgets.example.io/v1": gadgetOpenAPI}}
	owned := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.gadgets.example.io", Labels: map[string]string{SyncTargetLabel: "east"},
			Annotations: map[string]string{CRDSourceAnnotation: string(v1alpha1.TypeSourceOpenAPI), CRDHashAnnotation: "stale"}},
	}
	f := newTypeFixture(t, typeSide{api: api, crds: []*apiextensionsv1.CustomResourceDefinition{owned}}, typeSide{api: api})
	const openAPIPath = "/openapi/v3/apis/gadgets.example.io/v1"
	for i := range 3 {
		info, st := f.resolve(t, gadgets)
		require.NotNil(t, info, st.Message)
		assert.Equal(t, v1alpha1.ResourceSynced, st.State)
		assert.Equal(t, v1alpha1.TypeSourceOpenAPI, st.Source)
		assert.Equal(t, 1, api.requestsOf(openAPIPath), "OpenAPI reads after %d resolutions", i+1)
	}
	crd := f.upCRD(t, "gadgets.gadgets.example.io")
	assert.Equal(t, hashJSON(crd.Spec), crd.Annotations[CRDHashAnnotation], "rebuilt from the cluster's OpenAPI")
	assert.Equal(t, "Gadget", crd.Spec.Names.Kind)
}

// TestDiscoverySnapshotReadsAGroupVersionOnce: one resolution round reads
// each group version's resources once, however many resources it has.
func TestDiscoverySnapshotReadsAGroupVersionOnce(t *testing.T) {
	api := &fakeAPI{groups: []apiGroup{core(resource("configmaps", "ConfigMap", false), resource("secrets", "Secret", false))}}
	f := newTypeFixture(t, typeSide{api: api}, typeSide{api: &fakeAPI{groups: api.groups}})
	down, err := newDiscoverySnapshot(t.Context(), f.s.down.discovery)
	require.NoError(t, err)
	up, err := newDiscoverySnapshot(t.Context(), f.s.up.discovery)
	require.NoError(t, err)
	for _, r := range []string{"configmaps", "secrets", "configmaps"} {
		_, st := f.s.resolveType(t.Context(), schema.GroupResource{Resource: r}, down, up)
		assert.Equal(t, v1alpha1.ResourceSynced, st.State, st.Message)
	}
	assert.Equal(t, 1, api.requestsOf("/api/v1"))
}
