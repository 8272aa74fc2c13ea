package builtin_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
	"github.com/heaven-dev/heaven/pkg/generated/openapi"
	"github.com/heaven-dev/heaven/test/etcdtest"
)

// startServer serves the built-in groups from a fresh embedded etcd and
// returns a client config for them.
func startServer(t *testing.T) *rest.Config {
	t.Helper()
	getter := restOptionsGetter{etcdURL: etcdtest.NewForTest(t, etcdtest.Config{}).URL}

	cfg := genericapiserver.NewConfig(scheme.Codecs)
	cfg.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString("1.37", "", "")
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.LoopbackClientConfig = &rest.Config{}
	namer := openapinamer.NewDefinitionNamer(scheme.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	server, err := cfg.Complete(nil).New("heaven-test", genericapiserver.NewEmptyDelegate())
	require.NoError(t, err)
	t.Cleanup(server.Destroy)

	legacy, groups, err := builtin.APIGroupInfos(getter)
	require.NoError(t, err)
	require.NoError(t, server.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, legacy))
	require.NoError(t, server.InstallAPIGroups(groups...))

	httpServer := httptest.NewServer(server.Handler)
	t.Cleanup(httpServer.Close)
	return &rest.Config{Host: httpServer.URL, QPS: -1}
}

// restOptionsGetter stores each resource as JSON at its storage version under
// /registry/<group>/<resource>.
type restOptionsGetter struct{ etcdURL string }

func (g restOptionsGetter) GetRESTOptions(resource schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	var storageVersion schema.GroupVersion
	for _, r := range builtin.Resources() {
		if r.GroupResource == resource {
			storageVersion = r.StorageVersion
		}
	}
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	codec := scheme.Codecs.CodecForVersions(info.Serializer, info.Serializer, storageVersion, scheme.InternalVersion(storageVersion))
	config := storagebackend.NewDefaultConfig("/registry", codec)
	config.Type = storagebackend.StorageTypeETCD3
	config.Transport.ServerList = []string{g.etcdURL}
	config.EncodeVersioner = storageVersion
	prefix := resource.Resource
	if resource.Group != "" {
		prefix = resource.Group + "/" + resource.Resource
	}
	return generic.RESTOptions{
		StorageConfig:  config.ForResource(resource),
		Decorator:      generic.UndecoratedStorage,
		ResourcePrefix: prefix,
	}, nil
}
