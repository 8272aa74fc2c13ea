// Package builtin serves Kubernetes' built-in API groups in a heaven with
// kube-apiserver's own code: the REST storage providers of
// k8s.io/kubernetes/pkg/registry (stores, strategies, defaulting,
// validation, table columns, RBAC's escalation checks), the group versions
// kube-apiserver's generic control plane enables, and its storage encoding
// (k8s.io/kubernetes/pkg/kubeapiserver). Nothing here decides what
// Kubernetes decides; the package only chooses which groups a heaven serves
// and hands them a heaven's storage.
//
// A generic heaven serves what kcp's generic control plane serves
// (k8s.io/kubernetes/pkg/controlplane/apiserver.GenericStorageProviders),
// without flow control and the apiserver-internal and storage-migration
// groups (heaven-server has one front for every heaven), plus apps/v1
// Deployments (what the syncer places on clusters). A kubernetes heaven
// serves what kube-apiserver serves (kubernetes.go).
//
// The groups are installed as GenericAPIServer.InstallAPIGroups installs
// them, but with a server-side apply type converter shared by the heavens
// that serve the same types, which that method cannot take (apigroups).
package builtin

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	admissionregistrationrest "k8s.io/kubernetes/pkg/registry/admissionregistration/rest"
	appsrest "k8s.io/kubernetes/pkg/registry/apps/rest"
	authenticationrest "k8s.io/kubernetes/pkg/registry/authentication/rest"
	authorizationrest "k8s.io/kubernetes/pkg/registry/authorization/rest"
	certificatesrest "k8s.io/kubernetes/pkg/registry/certificates/rest"
	coordinationrest "k8s.io/kubernetes/pkg/registry/coordination/rest"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
	eventsrest "k8s.io/kubernetes/pkg/registry/events/rest"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/heaven-dev/heaven/pkg/apigroups"
	"github.com/heaven-dev/heaven/pkg/authorization"
)

// DefaultEventTTL is how long an Event lives after its last update, as in
// kube-apiserver.
const DefaultEventTTL = time.Hour

// Config is what the built-in groups take from the heaven's server.
type Config struct {
	// Authorizer decides RBAC's escalation checks and the review APIs.
	Authorizer   authorizer.Authorizer
	RuleResolver authorizer.RuleResolver
	// RBAC is the heaven's policy; Install binds it to the RBAC stores.
	RBAC *authorization.Policy
	// Authenticator answers TokenReviews (none: every token is
	// unauthenticated).
	Authenticator authenticator.Request
	// ServiceAccountTokens, if set, issues the tokens of the TokenRequest
	// API (serviceaccounts/token) for APIAudiences.
	ServiceAccountTokens serviceaccount.TokenGenerator
	APIAudiences         authenticator.Audiences
	// Discovery resolves the resources admission policies name.
	Discovery discovery.DiscoveryInterface
	EventTTL  time.Duration

	// Kubernetes serves kube-apiserver's whole built-in API (a kubernetes
	// heaven, kubernetes.go) instead of the generic control plane's.
	Kubernetes bool
	// ReadOnly serves a heaven as of a past revision: the groups' start-up
	// writes and controllers (priority classes, the default ServiceCIDR,
	// the allocators' repair loops) are left out.
	ReadOnly bool
	// Loopback reaches the heaven itself and Informers are its shared
	// informers: a kubernetes heaven's Service allocators and start-up
	// controllers use them.
	Loopback  *rest.Config
	Informers informers.SharedInformerFactory
	// Ranges stores the bitmap of a kubernetes heaven's node ports: state
	// derived from its Services, which the repair loop rebuilds, kept out
	// of git (k8s.io/kubernetes' allocator takes a storage factory).
	Ranges serverstorage.StorageFactory
	// Serving is the server's configuration the handlers are built with.
	Serving apigroups.Serving
}

// storageProvider is the interface of k8s.io/kubernetes' REST storage
// providers (pkg/controlplane/apiserver.RESTStorageProvider).
type storageProvider interface {
	GroupName() string
	NewRESTStorage(serverstorage.APIResourceConfigSource, generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error)
}

func (c Config) providers() ([]storageProvider, error) {
	ttl := c.EventTTL
	if ttl == 0 {
		ttl = DefaultEventTTL
	}
	if c.Kubernetes {
		return c.kubernetesProviders(ttl)
	}
	// The order is discovery's: an unqualified name ("events") means the
	// first group that serves it.
	return []storageProvider{
		&corerest.GenericConfig{EventTTL: ttl, ServiceAccountIssuer: c.ServiceAccountTokens, APIAudiences: c.APIAudiences},
		authenticationrest.RESTStorageProvider{Authenticator: c.Authenticator},
		authorizationrest.RESTStorageProvider{Authorizer: c.Authorizer, RuleResolver: c.RuleResolver},
		certificatesrest.RESTStorageProvider{Authorizer: c.Authorizer, Generic: true},
		coordinationrest.RESTStorageProvider{},
		rbacProvider{Authorizer: c.Authorizer, Policy: c.RBAC},
		admissionregistrationrest.RESTStorageProvider{Authorizer: c.Authorizer, DiscoveryClient: c.Discovery},
		eventsrest.RESTStorageProvider{TTL: ttl},
		appsrest.StorageProvider{},
	}, nil
}

// ResourceConfig is which group versions and resources a heaven serves.
func (c Config) ResourceConfig() *serverstorage.ResourceConfig {
	if c.Kubernetes {
		return KubernetesResourceConfig()
	}
	return GenericResourceConfig()
}

// GenericResourceConfig is what a generic heaven serves: the generic control
// plane's defaults, and of apps/v1 only Deployments.
func GenericResourceConfig() *serverstorage.ResourceConfig {
	c := serverstorage.NewResourceConfig()
	for _, gv := range servedVersions {
		c.EnableVersions(gv)
	}
	for _, r := range []string{"statefulsets", "daemonsets", "replicasets", "controllerrevisions"} {
		c.DisableResources(appsv1.SchemeGroupVersion.WithResource(r))
	}
	return c
}

// Install builds every built-in group's REST storage over optsGetter and
// installs it into s, as kube-apiserver's InstallAPIs does (but for the
// type converter, see apigroups).
func Install(s *genericapiserver.GenericAPIServer, c Config, optsGetter generic.RESTOptionsGetter) error {
	resources := c.ResourceConfig()
	providers, err := c.providers()
	if err != nil {
		return err
	}
	var groups []*genericapiserver.APIGroupInfo
	for _, p := range providers {
		info, err := p.NewRESTStorage(resources, optsGetter)
		if err != nil {
			apigroups.Destroy(groups...)
			return fmt.Errorf("API group %q: %w", p.GroupName(), err)
		}
		if len(info.VersionedResourcesStorageMap) == 0 {
			continue
		}
		shareTablePrinters(&info)
		if p.GroupName() == "" {
			if err := apigroups.Install(s, c.Serving, genericapiserver.DefaultLegacyAPIPrefix, []*genericapiserver.APIGroupInfo{&info}); err != nil {
				apigroups.Destroy(append(groups, &info)...)
				return fmt.Errorf("core API: %w", err)
			}
			continue
		}
		groups = append(groups, &info)
	}
	if err := apigroups.Install(s, c.Serving, genericapiserver.APIGroupPrefix, groups); err != nil {
		apigroups.Destroy(groups...)
		return fmt.Errorf("API groups: %w", err)
	}
	if c.ReadOnly {
		return nil
	}
	return addHooks(s, c, providers)
}

// addHooks adds the post-start hooks of the providers (the allocators'
// repair loops, the system priority classes) and of a kubernetes heaven's
// start-up controllers.
func addHooks(s *genericapiserver.GenericAPIServer, c Config, providers []storageProvider) error {
	hooks := map[string]genericapiserver.PostStartHookFunc{}
	for _, p := range providers {
		if hp, ok := p.(genericapiserver.PostStartHookProvider); ok {
			name, hook, err := hp.PostStartHook()
			if err != nil {
				return fmt.Errorf("start-up of API group %q: %w", p.GroupName(), err)
			}
			hooks[name] = hook
		}
	}
	for name, hook := range hooks {
		if err := s.AddPostStartHook(name, tolerantHook(name, hook)); err != nil {
			return err
		}
	}
	if c.Kubernetes {
		return c.addKubernetesHooks(s)
	}
	return nil
}

// servedVersions are the group versions a heaven serves: the stable ones of
// the generic control plane
// (k8s.io/kubernetes/pkg/controlplane.DefaultGenericAPIResourceConfigSource)
// but flow control, and apps/v1.
var servedVersions = []schema.GroupVersion{
	{Version: "v1"},
	{Group: "admissionregistration.k8s.io", Version: "v1"},
	{Group: "authentication.k8s.io", Version: "v1"},
	{Group: "authorization.k8s.io", Version: "v1"},
	{Group: "certificates.k8s.io", Version: "v1"},
	{Group: "coordination.k8s.io", Version: "v1"},
	{Group: "events.k8s.io", Version: "v1"},
	{Group: "rbac.authorization.k8s.io", Version: "v1"},
	appsv1.SchemeGroupVersion,
}
