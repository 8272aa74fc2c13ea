// Package heavenapi assembles the Kubernetes API server of one heaven from
// the unmodified libraries: k8s.io/apiextensions-apiserver (CRDs) with the
// built-in types installed into the same GenericAPIServer, storage through
// k8s.io/apiserver's etcd3 store (see pkg/heavenapi/storage), and the
// controllers a real control plane would run for these types (namespace
// deletion). It has no listener of its own: heaven-server's front handler
// calls Handler after stripping /clusters/<name>.
package heavenapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/compatibility"

	"github.com/heaven-dev/heaven/pkg/authorization"
	builtin "github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
	"github.com/heaven-dev/heaven/pkg/memnet"
)

// Config is what a heaven's API server is made of.
type Config struct {
	// Name of the heaven; its objects live on the git branch of that name.
	Name string
	// Kubernetes makes the heaven serve kube-apiserver's whole built-in
	// API (a heaven of type kubernetes) instead of the generic control
	// plane's.
	Kubernetes bool
	// ReadOnly serves a heaven as of a past revision (its Clients read
	// there and refuse writes): no initial namespaces, no controllers, no
	// history API.
	ReadOnly bool
	// Clients reach the git store and the ephemeral etcd.
	Clients storage.Clients
	// Ephemeral says which resources go to the ephemeral etcd.
	Ephemeral func(schema.GroupResource) bool
	// Loopback reaches this heaven through heaven-server's front as a
	// privileged user; the heaven's own controllers use it.
	Loopback *rest.Config
	// ExternalAddress is host:port of heaven-server, for discovery.
	ExternalAddress string
	// Authorizers decide before the heaven's RBAC (and after server
	// administrators, who may do everything); see pkg/authorization.
	Authorizers []authorization.Named
	// ProtectedGroups can't be impersonated but by server administrators
	// (nor can system:masters and heaven:admins).
	ProtectedGroups []string
	// Admission plugins run before Kubernetes' (root's records who
	// creates a Heaven).
	Admission []admission.Interface
	// ServiceAccounts, if set, makes the heaven issue and accept
	// ServiceAccount tokens.
	ServiceAccounts *ServiceAccounts
	// Audit, if set, is the audit log the heaven's requests go to.
	Audit *Audit
	// History, if set, serves the heaven's git history
	// (history.heaven.dev, pkg/history).
	History *History
}

// History is where a heaven's history API reads and writes.
type History struct {
	Repo *gitstore.Repository
	// MayRead says whether the request's user may read another heaven's
	// history (a Diff against it).
	MayRead func(ctx context.Context, heaven string) error
}

// userFromContext authenticates a request by the user heaven-server's front
// handler has already put in its context: the front authenticates once for
// every heaven.
var userFromContext = authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
	u, ok := request.UserFrom(req.Context())
	if !ok {
		return nil, false, nil
	}
	return &authenticator.Response{User: u}, true, nil
})

// genericConfig is the part every heaven shares in shape.
// It also returns the loopback clientset its admission uses.
func (c *Config) genericConfig(policy *authorization.Policy) (*genericapiserver.RecommendedConfig, kubernetes.Interface, error) {
	gc := genericapiserver.NewRecommendedConfig(apiextensionsapiserver.Codecs)
	gc.EffectiveVersion = compatibility.NewEffectiveVersionFromString(builtin.KubernetesVersion, "", "")
	gc.MergedResourceConfig = apiextensionsapiserver.DefaultAPIResourceConfigSource()
	gc.ExternalAddress = c.ExternalAddress
	gc.LoopbackClientConfig = c.Loopback
	gc.Authentication.Authenticator = userFromContext
	authz, rules, err := authorization.New(policy, c.ProtectedGroups, c.Authorizers...)
	if err != nil {
		return nil, nil, err
	}
	gc.Authorization.Authorizer = authz
	gc.RuleResolver = rules
	if c.Audit != nil && c.Audit.Backend != nil {
		gc.AuditBackend = newHeavenAudit(c.Name, c.Audit.Backend)
		gc.AuditPolicyRuleEvaluator = c.Audit.Policy
	}
	gc.EnableMetrics = false // heaven-server serves /metrics once, with a heaven label
	gc.EnableProfiling = false
	gc.RESTOptionsGetter = &storage.Getter{Heaven: c.Name, Clients: c.Clients, Codec: typedCodec, Ephemeral: c.Ephemeral, GarbageCollection: c.Kubernetes}

	gc.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(getDefinitions, definitionNamer())
	gc.OpenAPIConfig.Info.Title = "Heaven"
	gc.OpenAPIV3Config = openAPIV3Config()
	// installOpenAPI serves the documents, shared by every heaven.
	gc.SkipOpenAPIInstallation = true

	kube, err := kubernetes.NewForConfig(c.Loopback)
	if err != nil {
		return nil, nil, err
	}
	gc.ClientConfig = c.Loopback
	gc.SharedInformerFactory = informerFactory{informers.NewSharedInformerFactory(kube, 0)}
	if err := applyAdmission(gc, kube, c.Kubernetes, c.builtin().ResourceConfig()); err != nil {
		return nil, nil, fmt.Errorf("admission: %w", err)
	}
	if len(c.Admission) > 0 {
		gc.AdmissionControl = admission.NewChainHandler(append(slices.Clone(c.Admission), gc.AdmissionControl)...)
	}
	return gc, kube, nil
}

// builtin is the part of the built-in groups' configuration that says
// what they serve.
func (c *Config) builtin() builtin.Config {
	return builtin.Config{Kubernetes: c.Kubernetes, ReadOnly: c.ReadOnly}
}

// initialNamespaces are the namespaces the heaven creates when it starts.
func (c *Config) initialNamespaces() []string {
	if c.ReadOnly {
		return nil
	}
	if c.Kubernetes {
		return append(slices.Clone(InitialNamespaces), metav1.NamespacePublic, corev1.NamespaceNodeLease)
	}
	return InitialNamespaces
}

// typedCodec is the storage codec of the CRD type and of the built-in types:
// JSON of the storage version (the git store indents it for people).
func typedCodec(gr schema.GroupResource, example runtime.Object) (runtime.Codec, runtime.GroupVersioner, error) {
	if gr.Group == apiextensionsv1.GroupName {
		return serverstorage.NewStorageCodec(serverstorage.StorageCodecConfig{
			StorageMediaType:  runtime.ContentTypeJSON,
			StorageSerializer: apiextensionsapiserver.Codecs,
			StorageVersion:    apiextensionsv1.SchemeGroupVersion,
			MemoryVersion:     schema.GroupVersion{Group: apiextensionsinternal.GroupName, Version: runtime.APIVersionInternal},
		})
	}
	return builtin.StorageCodec(gr, example)
}

// unstructuredCodec is the storage codec of custom resources, as
// apiextensions-apiserver's own options build it: JSON in, JSON out; the CRD
// handler wraps it with conversion to the storage version.
func unstructuredCodec(schema.GroupResource, runtime.Object) (runtime.Codec, runtime.GroupVersioner, error) {
	return runtime.NewCodec(unstructured.UnstructuredJSONScheme, unstructured.UnstructuredJSONScheme), nil, nil
}

// idleListener stands in for a secure listener: the generic server's run
// loop needs one to shut down in order, but a heaven is reached only through
// the front handler, so nobody dials it. Its address is the heaven's
// external one.
func idleListener(addr string) *memnet.Listener {
	tcp, _ := net.ResolveTCPAddr("tcp", addr)
	if tcp == nil {
		tcp = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	}
	return memnet.NewListener(tcp)
}
