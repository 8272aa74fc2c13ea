package heavenapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	openapiv3controller "k8s.io/apiextensions-apiserver/pkg/controller/openapiv3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/handler3"
)

// TestCRDOpenAPIV3MatchesUpstream checks that the CRDs' OpenAPI v3
// documents built on request are those apiextensions' own controller
// publishes (addresses in the discovery document and the documents
// themselves) as CRDs come, change and go.
func TestCRDOpenAPIV3MatchesUpstream(t *testing.T) {
	ctx := t.Context()
	client := apiextensionsfake.NewSimpleClientset(
		testCRD("widgets", "example.com", "1", true, "v1"),
		testCRD("gadgets", "example.com", "1", true, "v1"),
		testCRD("things", "other.example.com", "1", true, "v1", "v2"),
		testCRD("pending", "pending.example.com", "1", false, "v1"),
	)
	factory := apiextensionsinformers.NewSharedInformerFactory(client, 0)
	crds := factory.Apiextensions().V1().CustomResourceDefinitions()
	reference := handler3.NewOpenAPIService()
	controller := openapiv3controller.NewController(crds)
	ours := newCRDOpenAPIV3(crds.Lister())
	factory.Start(ctx.Done())
	go controller.Run(reference, ctx.Done())

	// same waits until ours and the reference list the same paths, wants
	// them, and serves their documents alike.
	same := func(want ...string) map[string]string {
		t.Helper()
		var urls map[string]string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var ref handler3.OpenAPIV3Discovery
			require.NoError(c, serveJSON(reference.HandleDiscovery, "/openapi/v3", &ref))
			got, err := ours.discovery()
			require.NoError(c, err)
			urls = map[string]string{}
			for path, u := range got {
				urls[path] = u.ServerRelativeURL
			}
			for _, path := range want {
				require.Contains(c, urls, path)
			}
			require.Len(c, urls, len(want))
			for path, u := range ref.Paths {
				require.Equal(c, u.ServerRelativeURL, urls[path], "address of %s", path)
			}
			require.Len(c, ref.Paths, len(want))
		}, 10*time.Second, 20*time.Millisecond)
		for _, u := range urls {
			wantDoc := get(t, reference.HandleGroupVersion, u)
			gotDoc := get(t, ours.serveGroupVersion, u)
			require.Equal(t, http.StatusOK, wantDoc.Code, u)
			require.Equal(t, http.StatusOK, gotDoc.Code, u)
			assert.JSONEq(t, wantDoc.Body.String(), gotDoc.Body.String(), u)
			assert.Equal(t, wantDoc.Header().Get("Etag"), gotDoc.Header().Get("Etag"), u)
			assert.Equal(t, "public, immutable", gotDoc.Header().Get("Cache-Control"), u)
		}
		return urls
	}

	before := same("apis/example.com/v1", "apis/other.example.com/v1", "apis/other.example.com/v2")
	var doc map[string]any
	require.NoError(t, json.Unmarshal(get(t, ours.serveGroupVersion, before["apis/example.com/v1"]).Body.Bytes(), &doc))
	for _, kind := range []string{"com.example.v1.Widget", "com.example.v1.Gadget"} {
		assert.Contains(t, doc["components"].(map[string]any)["schemas"], kind)
	}

	t.Run("a changed CRD changes its group version's address", func(t *testing.T) {
		changed := testCRD("widgets", "example.com", "2", true, "v1")
		changed.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Description: "What the widget should be."}
		_, err := client.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, changed, metav1.UpdateOptions{})
		require.NoError(t, err)
		var after map[string]string
		require.Eventually(t, func() bool {
			after = same("apis/example.com/v1", "apis/other.example.com/v1", "apis/other.example.com/v2")
			return after["apis/example.com/v1"] != before["apis/example.com/v1"]
		}, 10*time.Second, 50*time.Millisecond)
		assert.Equal(t, before["apis/other.example.com/v1"], after["apis/other.example.com/v1"])
		assert.Contains(t, get(t, ours.serveGroupVersion, after["apis/example.com/v1"]).Body.String(), "What the widget should be.")

		// The old address leads to the new one, as kube-openapi answers.
		old := get(t, ours.serveGroupVersion, before["apis/example.com/v1"])
		assert.Equal(t, http.StatusMovedPermanently, old.Code)
		assert.Equal(t, after["apis/example.com/v1"], old.Header().Get("Location"))
	})

	t.Run("a deleted CRD leaves its group version", func(t *testing.T) {
		for _, name := range []string{"gadgets.example.com", "widgets.example.com"} {
			require.NoError(t, client.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, name, metav1.DeleteOptions{}))
		}
		same("apis/other.example.com/v1", "apis/other.example.com/v2")
		assert.Equal(t, http.StatusNotFound, get(t, ours.serveGroupVersion, "/openapi/v3/apis/example.com/v1").Code)
	})
}

// testCRD is an established (or not) CRD of a namespaced kind serving the
// given versions, the first one stored.
func testCRD(plural, group, resourceVersion string, established bool, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	kind := strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s")
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group, ResourceVersion: resourceVersion},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type:       "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", XPreserveUnknownFields: ptrTo(true)}},
			}},
		})
	}
	if established {
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}
	}
	return crd
}

func ptrTo[T any](v T) *T { return &v }

// get serves a GET of url (a path and query) with h.
func get(t *testing.T, h http.HandlerFunc, url string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h(w, httptest.NewRequest(http.MethodGet, url, nil))
	return w
}
