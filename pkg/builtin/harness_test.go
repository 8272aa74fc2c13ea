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
	"k8s.io/client-go/informers"
	kubeclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"

	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/heaven-dev/heaven/pkg/apigroups"
	"github.com/heaven-dev/heaven/pkg/authorization"
	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
	"github.com/heaven-dev/heaven/test/etcdtest"
)

// startServer serves the built-in groups of a generic or a kubernetes
// heaven from a fresh embedded etcd and returns a client config for them.
func startServer(t *testing.T, kubernetes bool) *rest.Config {
	t.Helper()
	etcdURL := etcdtest.NewForTest(t, etcdtest.Config{}).URL
	getter := restOptionsGetter{etcdURL: etcdURL}
	httpServer := httptest.NewUnstartedServer(nil)
	httpServer.Start()
	t.Cleanup(httpServer.Close)
	loopback := &rest.Config{Host: httpServer.URL, QPS: -1}

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
	c := builtin.Config{
		Authorizer:   allow,
		RuleResolver: allow,
		RBAC:         &authorization.Policy{},
		Discovery:    fake.NewClientset().Discovery(),
		Kubernetes:   kubernetes,
		Serving:      apigroups.ServingOf(cfg), // completed above
	}
	if kubernetes {
		c.Loopback = loopback
		c.Informers = informers.NewSharedInformerFactory(kubeclient.NewForConfigOrDie(loopback), 0)
		c.Ranges = storage.Ranges{Heaven: "test", Endpoints: []string{etcdURL}, Codec: builtin.StorageCodec}
	}
	require.NoError(t, builtin.Install(server, c, getter))
	httpServer.Config.Handler = server.Handler
	return loopback
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
