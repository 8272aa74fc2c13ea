package etcdv3

import (
	"testing"
)

// kubeLike is a small version of kube-apiserver's layout over heavens'.
func kubeLike(t *testing.T) *KeyMap {
	t.Helper()
	m, err := NewKeyMap([]PrefixPair{
		{Client: "/registry/", Store: "/"},
		{Client: "/registry/pods/", Store: "/core/pods/"},
		{Client: "/registry/services/specs/", Store: "/core/services/"},
		{Client: "/registry/services/endpoints/", Store: "/core/endpoints/"},
		{Client: "/registry/deployments/", Store: "/apps/deployments/"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestKeyMapKeys(t *testing.T) {
	m := kubeLike(t)
	for _, tc := range []struct {
		client, store string
		refused       bool
	}{
		{client: "/registry/pods/ns/a", store: "/core/pods/ns/a"},
		{client: "/registry/services/specs/ns/s", store: "/core/services/ns/s"},
		{client: "/registry/deployments/ns/d", store: "/apps/deployments/ns/d"},
		{client: "/registry/example.com/widgets/ns/w", store: "/example.com/widgets/ns/w"},
		{client: "/registry/masterleases/10.0.0.1", store: "/masterleases/10.0.0.1"},
		{client: "compact_rev_key", store: "compact_rev_key"},
		// The store's /core/pods/ns/a is /registry/pods/ns/a.
		{client: "/registry/core/pods/ns/a", refused: true},
		// The store's /foo is /registry/foo.
		{client: "/foo", refused: true},
	} {
		s, err := m.StoreKey([]byte(tc.client))
		if tc.refused {
			if err == nil {
				t.Errorf("StoreKey(%q) = %q, want an error", tc.client, s)
			}
			continue
		}
		if err != nil || string(s) != tc.store {
			t.Errorf("StoreKey(%q) = %q, %v; want %q", tc.client, s, err, tc.store)
		}
		if c := m.ClientKey([]byte(tc.store)); string(c) != tc.client {
			t.Errorf("ClientKey(%q) = %q, want %q", tc.store, c, tc.client)
		}
	}
}

func TestKeyMapRanges(t *testing.T) {
	m := kubeLike(t)
	for _, tc := range []struct {
		name               string
		key, end           string
		storeKey, storeEnd string
		refused            bool
	}{
		{name: "a resource", key: "/registry/pods/", end: "/registry/pods0", storeKey: "/core/pods/", storeEnd: "/core/pods0"},
		{name: "the next page", key: "/registry/pods/ns/a\x00", end: "/registry/pods0", storeKey: "/core/pods/ns/a\x00", storeEnd: "/core/pods0"},
		{name: "a namespace", key: "/registry/services/specs/ns/", end: "/registry/services/specs/ns0", storeKey: "/core/services/ns/", storeEnd: "/core/services/ns0"},
		{name: "a key of the same pair", key: "/registry/pods/ns/a", end: "/registry/pods/ns/c", storeKey: "/core/pods/ns/a", storeEnd: "/core/pods/ns/c"},
		{name: "every key from here: to the end of the pair", key: "/registry/deployments/ns/", end: "\x00", storeKey: "/apps/deployments/ns/", storeEnd: "/apps/deployments0"},
		{name: "a custom resource", key: "/registry/example.com/widgets/", end: "/registry/example.com/widgets0", storeKey: "/example.com/widgets/", storeEnd: "/example.com/widgets0"},
		{name: "end before key: empty", key: "/registry/pods/b", end: "/registry/pods/a", storeKey: "/core/pods/b", storeEnd: "/core/pods/b"},
		{name: "everything", key: "/registry/", end: "/registry0", refused: true},
		{name: "two resources", key: "/registry/pods/", end: "/registry/services/", refused: true},
		{name: "every service key (specs and endpoints)", key: "/registry/services/", end: "/registry/services0", refused: true},
		{name: "every key from a key no pair names", key: "+a", end: "\x00", refused: true},
		{name: "keys no pair names", key: "compact_rev_key", end: "compact_rev_kez", storeKey: "compact_rev_key", storeEnd: "compact_rev_kez"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, e, err := m.StoreRange([]byte(tc.key), []byte(tc.end))
			if tc.refused {
				if err == nil {
					t.Fatalf("StoreRange = [%q, %q), want an error", s, e)
				}
				t.Log(err)
				return
			}
			if err != nil || string(s) != tc.storeKey || string(e) != tc.storeEnd {
				t.Errorf("StoreRange = [%q, %q), %v; want [%q, %q)", s, e, err, tc.storeKey, tc.storeEnd)
			}
		})
	}
}

func TestNewKeyMapRefusesAmbiguousPairs(t *testing.T) {
	for _, pairs := range [][]PrefixPair{
		{{Client: "/a/", Store: "/x/"}, {Client: "/a/", Store: "/y/"}},
		{{Client: "/a/", Store: "/x/"}, {Client: "/b/", Store: "/x/"}},
		{{Client: "", Store: "/x/"}},
	} {
		if _, err := NewKeyMap(pairs); err == nil {
			t.Errorf("NewKeyMap(%v): no error", pairs)
		}
	}
}
