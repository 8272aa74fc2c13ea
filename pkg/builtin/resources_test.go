package builtin_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/heaven-dev/heaven/pkg/builtin"
)

// TestResourcesAreWhatIsServed holds Resources to what the REST storage
// providers install: every resource served with get (the review APIs
// only take create) is listed once, with its kind and scope, and nothing
// else is. The events of events.k8s.io are core Events in storage.
func TestResourcesAreWhatIsServed(t *testing.T) {
	for _, kubernetes := range []bool{false, true} {
		t.Run(map[bool]string{false: "generic", true: "kubernetes"}[kubernetes], func(t *testing.T) {
			testResourcesAreWhatIsServed(t, kubernetes)
		})
	}
}

func testResourcesAreWhatIsServed(t *testing.T, kubernetes bool) {
	cfg := startServer(t, kubernetes)
	lists, err := discovery.NewDiscoveryClientForConfigOrDie(cfg).ServerPreferredResources()
	require.NoError(t, err)

	var served []builtin.Resource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		require.NoError(t, err)
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "get") {
				continue
			}
			if gv.Group == "events.k8s.io" {
				continue
			}
			served = append(served, builtin.Resource{GroupResource: gv.WithResource(r.Name).GroupResource(), Kind: r.Kind, Namespaced: r.Namespaced})
		}
	}
	if !assert.ElementsMatch(t, builtin.Resources(kubernetes), served) {
		t.Log("Served:")
		for _, r := range served {
			t.Logf("{schema.GroupResource{Group: %q, Resource: %q}, %q, %v},", r.GroupResource.Group, r.GroupResource.Resource, r.Kind, r.Namespaced)
		}
	}

	for _, r := range builtin.Resources(kubernetes) {
		obj, err := builtin.NewStored(r)
		require.NoError(t, err, r.GroupResource)
		typ := reflect.TypeOf(obj).Elem()
		assert.Equal(t, r.Kind, typ.Name(), "the stored type of %s", r.GroupResource)
		assert.True(t, strings.HasPrefix(typ.PkgPath(), "k8s.io/api/"), "%s is stored as a versioned type, not %s", r.GroupResource, typ.PkgPath())
	}
}
