package objectfile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func testReader() *Reader {
	decodeConfigMap := func(data []byte) error { return json.Unmarshal(data, &corev1.ConfigMap{}) }
	return &Reader{Types: map[schema.GroupResource]Type{
		{Resource: "configmaps"}: {Kind: "ConfigMap", Namespaced: true, Decode: decodeConfigMap},
		{Resource: "secrets"}:    {Kind: "Secret", Namespaced: true},
		{Resource: "namespaces"}: {Kind: "Namespace"},
	}, MaxBytes: 1 << 10}
}

func TestRead(t *testing.T) {
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},"data":{"a":"b"}}`
	for _, tc := range []struct {
		name, key, ext, content string
		want                    string // JSON served, when no error
		err                     string // part of the error
	}{
		{name: "indented JSON", key: "/core/configmaps/default/x", ext: ".json",
			content: "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\"name\": \"x\", \"namespace\": \"default\"}\n}\n",
			want:    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}` + "\n"},
		{name: "YAML", key: "/core/configmaps/default/x", ext: ".yaml",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: default\ndata:\n  a: b\n",
			want:    `{"apiVersion":"v1","data":{"a":"b"},"kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}` + "\n"},
		{name: "cluster-scoped", key: "/core/namespaces/team", ext: ".json",
			content: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`,
			want:    `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}` + "\n"},
		{name: "custom resource: shape only", key: "/example.com/widgets/default/w", ext: ".json",
			content: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":"any"}}`,
			want:    `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"},"spec":{"size":"any"}}` + "\n"},
		{name: "truncated JSON", key: "/core/configmaps/default/x", ext: ".json", content: cm[:40], err: "not valid JSON"},
		{name: "bad YAML", key: "/core/configmaps/default/x", ext: ".yaml", content: "a: [", err: "not valid YAML"},
		{name: "not an object", key: "/core/configmaps/default/x", ext: ".json", content: `["a"]`, err: "holds no object"},
		{name: "other extension", key: "/core/configmaps/default/x", ext: ".raw", content: cm, err: "objects are .json or .yaml files"},
		{name: "path of no object", key: "/notes", ext: ".json", content: `{}`, err: "not the path of an object"},
		{name: "too deep", key: "/core/configmaps/default/x/y", ext: ".json", content: `{}`, err: "not the path of an object"},
		{name: "too large", key: "/core/configmaps/default/x", ext: ".json", content: `{"a":"` + strings.Repeat("x", 2000) + `"}`, err: "more than the 1024 bytes"},
		{name: "no kind", key: "/core/configmaps/default/x", ext: ".json", content: `{"apiVersion":"v1","metadata":{"name":"x","namespace":"default"}}`, err: "apiVersion and kind must be set"},
		{name: "config map under secrets", key: "/core/secrets/default/x", ext: ".json", content: cm, err: "kind ConfigMap does not belong in core/secrets/"},
		{name: "other group", key: "/apps/configmaps/default/x", ext: ".json", content: cm, err: `is not of group "apps"`},
		{name: "name mismatch", key: "/core/configmaps/default/y", ext: ".json", content: cm, err: `metadata.name "x" is not "y"`},
		{name: "namespace mismatch", key: "/core/configmaps/other/x", ext: ".json", content: cm, err: `metadata.namespace "default" is not "other"`},
		{name: "namespaced without namespace level", key: "/core/configmaps/x", ext: ".json",
			content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`, err: "configmaps are namespaced"},
		{name: "cluster-scoped with namespace level", key: "/core/namespaces/default/team", ext: ".json",
			content: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team","namespace":"default"}}`, err: "namespaces are not namespaced"},
		{name: "wrong field type", key: "/core/configmaps/default/x", ext: ".json",
			content: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default"},"data":5}`, err: "not a valid ConfigMap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := testReader().Read(tc.key, []byte(tc.content), tc.ext)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestParseKey(t *testing.T) {
	p, err := ParseKey("/apps/deployments/default/web")
	require.NoError(t, err)
	assert.Equal(t, Path{GroupResource: schema.GroupResource{Group: "apps", Resource: "deployments"}, Namespace: "default", Name: "web"}, p)
	p, err = ParseKey("/core/namespaces/team")
	require.NoError(t, err)
	assert.Equal(t, Path{GroupResource: schema.GroupResource{Resource: "namespaces"}, Name: "team"}, p)
	for _, bad := range []string{"", "/", "core/namespaces/team", "/core/namespaces", "/core//x", "/a/b/c/d/e"} {
		_, err := ParseKey(bad)
		assert.Error(t, err, bad)
	}
}
