package apigroups

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // the core types in legacyscheme
	"k8s.io/kubernetes/pkg/generated/openapi"
)

// sampleStore is the part of a REST store that naming its type needs.
type sampleStore struct{ obj runtime.Object }

func (s sampleStore) New() runtime.Object { return s.obj.DeepCopyObject() }
func (s sampleStore) Destroy()            {}

// TestTypeConvertersAreShared: groups of the same types, described by the
// same definitions, get one type converter; other types or definitions
// get their own; and the converter converts what the groups serve.
func TestTypeConvertersAreShared(t *testing.T) {
	namer := openapinamer.NewDefinitionNamer(legacyscheme.Scheme)
	config := genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	core := func(resources map[string]rest.Storage) []*genericapiserver.APIGroupInfo {
		info := genericapiserver.NewDefaultAPIGroupInfo("", legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
		info.VersionedResourcesStorageMap["v1"] = resources
		return []*genericapiserver.APIGroupInfo{&info}
	}
	configMaps := map[string]rest.Storage{"configmaps": sampleStore{&api.ConfigMap{}}}
	withSecrets := map[string]rest.Storage{"configmaps": sampleStore{&api.ConfigMap{}}, "secrets": sampleStore{&api.Secret{}}}

	first, err := sharedTypeConverter(config, genericapiserver.DefaultLegacyAPIPrefix, core(configMaps))
	require.NoError(t, err)
	again, err := sharedTypeConverter(config, genericapiserver.DefaultLegacyAPIPrefix, core(configMaps))
	require.NoError(t, err)
	assert.True(t, first == again, "the same types and definitions share a converter")

	more, err := sharedTypeConverter(config, genericapiserver.DefaultLegacyAPIPrefix, core(withSecrets))
	require.NoError(t, err)
	assert.False(t, first == more, "other types get their own")

	otherDefinitions := genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	other, err := sharedTypeConverter(otherDefinitions, genericapiserver.DefaultLegacyAPIPrefix, core(configMaps))
	require.NoError(t, err)
	assert.False(t, first == other, "other definitions get their own")

	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, Data: map[string]string{"a": "1"}}
	typed, err := first.ObjectToTyped(cm)
	require.NoError(t, err)
	fields, err := typed.ToFieldSet()
	require.NoError(t, err)
	assert.Contains(t, fields.String(), ".data.a")

	_, err = sharedTypeConverter(nil, genericapiserver.DefaultLegacyAPIPrefix, core(configMaps))
	assert.Error(t, err, "no OpenAPI configuration")
}
