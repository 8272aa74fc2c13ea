package server

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/heaven-dev/heaven/pkg/pki"
)

func TestSyncerScopeAllows(t *testing.T) {
	const st = "/apis/heaven.dev/v1alpha1/synctargets"
	scope := syncerScope{heaven: "team-a", target: "east"}
	for _, tc := range []struct {
		what         string
		scope        *syncerScope // nil: team-a's syncer of east
		heaven, path string
		escaped      bool
		method       string
		query        string
		allowed      bool
	}{
		{what: "anything in its heaven", heaven: "team-a", path: "/api/v1/namespaces/x/configmaps", method: http.MethodPost, allowed: true},
		{what: "its heaven's root path", heaven: "team-a", path: "", method: http.MethodGet, allowed: true},
		{what: "its heaven's CRDs", heaven: "team-a", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", method: http.MethodPost, allowed: true},
		{what: "another heaven", heaven: "team-b", path: "/api/v1/configmaps", method: http.MethodGet},
		{what: "another heaven's SyncTarget path", heaven: "team-b", path: st + "/east", method: http.MethodGet},
		{what: "get its SyncTarget", heaven: "root", path: st + "/east", method: http.MethodGet, allowed: true},
		{what: "update its SyncTarget's spec", heaven: "root", path: st + "/east", method: http.MethodPut},
		{what: "patch its SyncTarget's spec", heaven: "root", path: st + "/east", method: http.MethodPatch},
		{what: "create its SyncTarget", heaven: "root", path: st + "/east", method: http.MethodPost},
		{what: "update its status", heaven: "root", path: st + "/east/status", method: http.MethodPut, allowed: true},
		{what: "patch its status", heaven: "root", path: st + "/east/status", method: http.MethodPatch, allowed: true},
		{what: "get its status", heaven: "root", path: st + "/east/status", method: http.MethodGet, allowed: true},
		{what: "delete its SyncTarget", heaven: "root", path: st + "/east", method: http.MethodDelete},
		{what: "create SyncTargets", heaven: "root", path: st, method: http.MethodPost},
		{what: "another SyncTarget", heaven: "root", path: st + "/west", method: http.MethodGet},
		{what: "another SyncTarget's status", heaven: "root", path: st + "/west/status", method: http.MethodPut},
		{what: "a name with its name as prefix", heaven: "root", path: st + "/east-2", method: http.MethodGet},
		{what: "a subresource other than status", heaven: "root", path: st + "/east/scale", method: http.MethodGet},
		{what: "a trailing slash", heaven: "root", path: st + "/east/", method: http.MethodGet},
		{what: "dot segments", heaven: "root", path: st + "/east/../west", method: http.MethodGet},
		{what: "escaped path", heaven: "root", path: st + "/east", escaped: true, method: http.MethodGet},
		{what: "list its SyncTarget", heaven: "root", path: st, method: http.MethodGet, query: "fieldSelector=metadata.name%3Deast&limit=500", allowed: true},
		{what: "watch its SyncTarget", heaven: "root", path: st, method: http.MethodGet, query: "fieldSelector=metadata.name%3D%3Deast&watch=true", allowed: true},
		{what: "list every SyncTarget", heaven: "root", path: st, method: http.MethodGet},
		{what: "list another SyncTarget", heaven: "root", path: st, method: http.MethodGet, query: "fieldSelector=metadata.name%3Dwest"},
		{what: "list with a negated selector", heaven: "root", path: st, method: http.MethodGet, query: "fieldSelector=metadata.name%21%3Deast"},
		{what: "list with two requirements", heaven: "root", path: st, method: http.MethodGet, query: "fieldSelector=metadata.name%3Deast,metadata.namespace%3D"},
		{what: "list with two selectors", heaven: "root", path: st, method: http.MethodGet, query: "fieldSelector=metadata.name%3Deast&fieldSelector=metadata.name%3Dwest"},
		{what: "delete the collection", heaven: "root", path: st, method: http.MethodDelete, query: "fieldSelector=metadata.name%3Deast"},
		{what: "Heaven objects in root", heaven: "root", path: "/apis/heaven.dev/v1alpha1/heavens", method: http.MethodGet},
		{what: "root's secrets", heaven: "root", path: "/api/v1/namespaces/default/secrets", method: http.MethodGet},
		{what: "root discovery", heaven: "root", path: "/apis", method: http.MethodGet},
		{what: "unparsable user: its heaven", scope: &syncerScope{}, heaven: "team-a", path: "/api", method: http.MethodGet},
		{what: "a syncer of root reaches root", scope: &syncerScope{heaven: "root", target: "x"}, heaven: "root", path: "/api/v1/secrets", method: http.MethodGet, allowed: true},
	} {
		t.Run(tc.what, func(t *testing.T) {
			s := scope
			if tc.scope != nil {
				s = *tc.scope
			}
			q, err := url.ParseQuery(tc.query)
			assert.NoError(t, err)
			assert.Equal(t, tc.allowed, s.allows(tc.heaven, tc.path, tc.escaped, tc.method, q))
		})
	}
}

func TestScopeOf(t *testing.T) {
	_, scoped := scopeOf(&user.DefaultInfo{Name: pki.AdminUser, Groups: []string{pki.AdminGroup}})
	assert.False(t, scoped, "the admin is not scoped")
	s, scoped := scopeOf(&user.DefaultInfo{Name: pki.SyncerUser("team-a", "east"), Groups: []string{pki.SyncerGroup}})
	assert.True(t, scoped)
	assert.Equal(t, syncerScope{heaven: "team-a", target: "east"}, s)
	s, scoped = scopeOf(&user.DefaultInfo{Name: "mallory", Groups: []string{pki.SyncerGroup}})
	assert.True(t, scoped, "the group alone scopes")
	assert.Equal(t, syncerScope{}, s, "to nothing")
}
