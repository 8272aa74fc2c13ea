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

	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/heaven-dev/heaven/pkg/authorization"
	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/test/etcdtest"
)

// startServer serves the built-in groups from a fresh embedded etcd and
// returns a client config for them.
func startServer(t *testing.T) *rest.Config {
	t.Helper()
	getter := restOptionsGetter{etcdURL: etcdtest.NewForTest(t, etcdtest.Config{}).URL}

	cfg := genericapiserver.NewConfig(legacyscheme.Codecs)
	cfg.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString(builtin.KubernetesVersion, "", "")
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.LoopbackClientConfig = &rest.Config{}
	namer := openapinamer.NewDefinitionNamer(legacyscheme.Scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	server, err := cfg.Complete(nil).New("heaven-test", genericapiserver.NewEmptyDelegate())
	require.NoError(t, err)
	t.Cleanup(server.Destroy)

	allow := authorizerfactory.NewAlwaysAllowAuthorizer()
	require.NoError(t, builtin.Install(server, builtin.Config{
		Authorizer:   allow,
		RuleResolver: allow,
		RBAC:         &authorization.Policy{},
		Discovery:    fake.NewClientset().Discovery(),
	}, getter))

	httpServer := httptest.NewServer(server.Handler)
	t.Cleanup(httpServer.Close)
	return &rest.Config{Host: httpServer.URL, QPS: -1}
}

// restOptionsGetter stores each resource as kube-apiserver does under
// /registry/<group>/<resource>.
type restOptionsGetter struct{ etcdURL string }

func (g restOptionsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	codec, versioner, err := builtin.StorageCodec(resource, example)
	if err != nil {
		return generic.RESTOptions{}, err
	}
	config := storagebackend.NewDefaultConfig("/registry", codec)
	config.Type = storagebackend.StorageTypeETCD3
	config.Transport.ServerList = []string{g.etcdURL}
	config.EncodeVersioner = versioner
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
