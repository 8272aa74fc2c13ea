package syncer

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestDownstreamNamespaceIsStableAndPerHeavenTargetAndNamespace(t *testing.T) {
	a := DownstreamNamespace("team-a", "east", "default")
	assert.Equal(t, a, DownstreamNamespace("team-a", "east", "default"), "stable")
	assert.Empty(t, validation.IsDNS1123Label(a))
	assert.Regexp(t, `^heaven-[0-9a-f]{16}$`, a)
	seen := map[string]bool{a: true}
	for _, other := range [][3]string{
		{"team-b", "east", "default"}, {"team-a", "west", "default"}, {"team-a", "east", "kube-system"},
		{"team-a-east", "", "default"}, {"team", "a-east", "default"},
	} {
		n := DownstreamNamespace(other[0], other[1], other[2])
		assert.False(t, seen[n], "%v collides", other)
		seen[n] = true
	}
}

func TestHeavenFromURL(t *testing.T) {
	for server, want := range map[string]string{
		"https://127.0.0.1:6443/clusters/team-a":       "team-a",
		"https://127.0.0.1:6443/clusters/team-a/":      "team-a",
		"https://heaven.example.com/prefix/clusters/x": "x",
	} {
		got, err := HeavenFromURL(server)
		require.NoError(t, err, server)
		assert.Equal(t, want, got, server)
	}
	for _, server := range []string{"https://127.0.0.1:6443", "https://127.0.0.1:6443/clusters/", "https://h/api"} {
		_, err := HeavenFromURL(server)
		assert.Error(t, err, server)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := NewOptions()
	errs := o.Validate()
	assert.Len(t, errs, 2, "upstream kubeconfig and sync target are required: %v", errs)

	o.UpstreamKubeconfig, o.SyncTarget = "k", "east"
	o.Resources = []string{"configmaps", "deployments.apps", "widgets.example.com"}
	assert.Empty(t, o.Validate())

	o.SyncTarget = "East_1"
	o.Resources = []string{"", "Deployments.apps"}
	o.HeartbeatInterval = 0
	assert.Len(t, o.Validate(), 4)
}

func TestRootURL(t *testing.T) {
	for server, want := range map[string]string{
		"https://127.0.0.1:6443/clusters/team-a":         "https://127.0.0.1:6443/clusters/root",
		"https://127.0.0.1:6443/clusters/team-a/":        "https://127.0.0.1:6443/clusters/root",
		"https://h.example/prefix/clusters/team-a":       "https://h.example/prefix/clusters/root",
		"https://h.example/clusters/root":                "https://h.example/clusters/root",
		"https://h.example:443/clusters/team-a?x=1#frag": "https://h.example:443/clusters/root?x=1#frag",
	} {
		got, err := RootURL(server)
		require.NoError(t, err, server)
		assert.Equal(t, want, got, server)
	}
	_, err := RootURL("https://127.0.0.1:6443")
	assert.Error(t, err)
}
