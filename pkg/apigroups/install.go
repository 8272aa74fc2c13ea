// Package apigroups installs API groups into a heaven's server as
// k8s.io/apiserver's GenericAPIServer.InstallAPIGroups and
// InstallLegacyAPIGroup do, with one difference: the server-side apply type
// converter, which those methods build from the groups' OpenAPI models at
// every call and cannot be handed, is built once per set of types and
// shared by every heaven that serves that set. Built per heaven, the
// converters took about 0.25 MiB of every running heaven (bench-server's
// scale phase), all of it the same in every heaven.
//
// The rest is upstream's: each group version's handlers are
// endpoints.APIGroupVersion.InstallREST, configured as GenericAPIServer
// configures it, and discovery is registered with the server's own
// managers.
package apigroups

import (
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	genericapi "k8s.io/apiserver/pkg/endpoints"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	discoveryendpoint "k8s.io/apiserver/pkg/endpoints/discovery/aggregated"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storageversion"
	"k8s.io/kube-openapi/pkg/builder3"
	openapicommon "k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
)

// Serving is what installing the groups needs of the heaven's server
// configuration (its completed genericapiserver.Config), which the
// GenericAPIServer keeps to itself.
type Serving struct {
	Admission           admission.Interface
	MinRequestTimeout   time.Duration
	MaxRequestBodyBytes int64
	DiscoveryAddresses  discovery.Addresses
	// OpenAPIV3Config's definitions are those the type converters are
	// built from: heavens whose configurations share the definitions
	// (the same map) share converters.
	OpenAPIV3Config *openapicommon.OpenAPIV3Config
}

// ServingOf is the part of a completed server configuration that
// installing the groups needs.
func ServingOf(c *genericapiserver.Config) Serving {
	return Serving{
		Admission:           c.AdmissionControl,
		MinRequestTimeout:   time.Duration(c.MinRequestTimeout) * time.Second,
		MaxRequestBodyBytes: c.MaxRequestBodyBytes,
		DiscoveryAddresses:  c.DiscoveryAddresses,
		OpenAPIV3Config:     c.OpenAPIV3Config,
	}
}

// Install installs API groups into s under prefix: the core group under
// /api as InstallLegacyAPIGroup does, named groups under /apis as
// InstallAPIGroups does. On failure, destroying the groups' storage is
// the caller's.
func Install(s *genericapiserver.GenericAPIServer, c Serving, prefix string, groups []*genericapiserver.APIGroupInfo) error {
	for _, g := range groups {
		if len(g.PrioritizedVersions) == 0 {
			return fmt.Errorf("no version priority set for %#v", *g)
		}
		if prefix == genericapiserver.APIGroupPrefix && (g.PrioritizedVersions[0].Group == "" || g.PrioritizedVersions[0].Version == "") {
			return fmt.Errorf("cannot register handler with an empty group or version for %#v", *g)
		}
	}
	converter, err := sharedTypeConverter(c.OpenAPIV3Config, prefix, groups)
	if err != nil {
		return fmt.Errorf("unable to get openapi models: %w", err)
	}
	for _, g := range groups {
		if err := installResources(s, c, prefix, g, converter); err != nil {
			return fmt.Errorf("unable to install api resources: %w", err)
		}
		if prefix == genericapiserver.APIGroupPrefix {
			installGroupDiscovery(s, g)
		}
		registerStorageReadiness(s, g)
	}
	if prefix != genericapiserver.APIGroupPrefix {
		root := discovery.NewLegacyRootAPIHandler(c.DiscoveryAddresses, s.Serializer, prefix)
		wrapped := discoveryendpoint.WrapAggregatedDiscoveryToHandler(root, s.AggregatedLegacyDiscoveryGroupManager, s.AggregatedLegacyDiscoveryGroupManager)
		s.Handler.GoRestfulContainer.Add(wrapped.GenerateWebService(prefix, metav1.APIVersions{}))
	}
	return nil
}

// installResources installs the handlers of a group's versions and their
// aggregated discovery (GenericAPIServer.installAPIResources).
func installResources(s *genericapiserver.GenericAPIServer, c Serving, prefix string, g *genericapiserver.APIGroupInfo, converter managedfields.TypeConverter) error {
	var infos []*storageversion.ResourceInfo
	for _, gv := range g.PrioritizedVersions {
		resources := g.VersionedResourcesStorageMap[gv.Version]
		if len(resources) == 0 {
			continue
		}
		storage := make(map[string]rest.Storage, len(resources))
		for name, store := range resources {
			if strings.ToLower(name) != name {
				return fmt.Errorf("resource names must be lowercase only, not %q", name)
			}
			storage[name] = store
		}
		version := &genericapi.APIGroupVersion{
			Root:                        prefix,
			Storage:                     storage,
			GroupVersion:                gv,
			AllServedVersionsByResource: servedVersionsByResource(g, gv.Group),
			MetaGroupVersion:            g.MetaGroupVersion,
			OptionsExternalVersion:      g.OptionsExternalVersion,

			ParameterCodec:        g.ParameterCodec,
			Serializer:            g.NegotiatedSerializer,
			Creater:               g.Scheme,
			Convertor:             g.Scheme,
			ConvertabilityChecker: g.Scheme,
			UnsafeConvertor:       runtime.UnsafeObjectConvertor(g.Scheme),
			Defaulter:             g.Scheme,
			Typer:                 g.Scheme,
			Namer:                 runtime.Namer(meta.NewAccessor()),
			TypeConverter:         converter,

			EquivalentResourceRegistry: s.EquivalentResourceRegistry,
			Admit:                      c.Admission,
			MinRequestTimeout:          c.MinRequestTimeout,
			Authorizer:                 s.Authorizer,
			MaxRequestBodyBytes:        c.MaxRequestBodyBytes,
		}
		discovered, r, err := version.InstallREST(s.Handler.GoRestfulContainer)
		if err != nil {
			return fmt.Errorf("unable to setup API %v: %w", gv, err)
		}
		infos = append(infos, r...)
		manager := s.AggregatedLegacyDiscoveryGroupManager
		if prefix == genericapiserver.APIGroupPrefix {
			manager = s.AggregatedDiscoveryGroupManager
		}
		manager.AddGroupVersion(gv.Group, apidiscoveryv2.APIVersionDiscovery{
			Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			Version:   gv.Version,
			Resources: discovered,
		})
	}
	s.RegisterDestroyFunc(func() { Destroy(g) })
	if s.FeatureGate.Enabled(features.StorageVersionAPI) && s.FeatureGate.Enabled(features.APIServerIdentity) {
		s.StorageVersionManager.AddResourceInfo(infos...)
	}
	return nil
}

// Destroy destroys the groups' stores: what the server does when it shuts
// down, and what a caller does with groups it failed to install.
func Destroy(groups ...*genericapiserver.APIGroupInfo) {
	for _, g := range groups {
		for _, stores := range g.VersionedResourcesStorageMap {
			for _, store := range stores {
				store.Destroy()
			}
		}
	}
}

// servedVersionsByResource lists, for each resource of a group, the
// versions it is served in ("group/version", or "version" for the core
// group).
func servedVersionsByResource(g *genericapiserver.APIGroupInfo, group string) map[string][]string {
	served := map[string][]string{}
	for version, resources := range g.VersionedResourcesStorageMap {
		for resource := range resources {
			if group == "" {
				served[resource] = append(served[resource], version)
			} else {
				served[resource] = append(served[resource], group+"/"+version)
			}
		}
	}
	return served
}

// installGroupDiscovery serves /apis/<group> and lists the group in /apis.
func installGroupDiscovery(s *genericapiserver.GenericAPIServer, g *genericapiserver.APIGroupInfo) {
	var versions []metav1.GroupVersionForDiscovery
	for _, gv := range g.PrioritizedVersions {
		if len(g.VersionedResourcesStorageMap[gv.Version]) == 0 {
			continue
		}
		versions = append(versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
	}
	preferred := g.PrioritizedVersions[0]
	group := metav1.APIGroup{
		Name:             preferred.Group,
		Versions:         versions,
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: preferred.String(), Version: preferred.Version},
	}
	s.DiscoveryGroupManager.AddGroup(group)
	s.Handler.GoRestfulContainer.Add(discovery.NewAPIGroupHandler(s.Serializer, group).WebService())
}

// registerStorageReadiness has the server's readiness wait for the
// group's stores that say when they are ready.
func registerStorageReadiness(s *genericapiserver.GenericAPIServer, g *genericapiserver.APIGroupInfo) {
	for version, stores := range g.VersionedResourcesStorageMap {
		for resource, store := range stores {
			if r, ok := store.(rest.StorageWithReadiness); ok {
				s.StorageReadinessHook.RegisterStorage(metav1.GroupVersionResource{
					Group: g.PrioritizedVersions[0].Group, Version: version, Resource: resource,
				}, r)
			}
		}
	}
}

// typeConverters are the converters built so far, by the definitions
// they were built from and the names of the types they convert. None is
// dropped: a process builds a handful (the core and the named groups of
// each heaven type, the history group).
var typeConverters = struct {
	sync.Mutex
	byTypes map[converterKey]managedfields.TypeConverter
}{byTypes: map[converterKey]managedfields.TypeConverter{}}

type converterKey struct {
	definitions unsafe.Pointer // the OpenAPIV3Config's Definitions map
	types       string
}

// sharedTypeConverter returns the type converter of the groups' resources:
// the one GenericAPIServer would build for them, built once for each set
// of types.
func sharedTypeConverter(config *openapicommon.OpenAPIV3Config, prefix string, groups []*genericapiserver.APIGroupInfo) (managedfields.TypeConverter, error) {
	if config == nil {
		return nil, fmt.Errorf("OpenAPIV3 config must not be nil")
	}
	ignored := openapiutil.NewTrie(config.IgnorePrefixes)
	var names []string
	for _, g := range groups {
		for _, gv := range g.PrioritizedVersions {
			for resource, store := range g.VersionedResourcesStorageMap[gv.Version] {
				if ignored.HasPrefix(path.Join(prefix, gv.Group, gv.Version, resource)) {
					continue
				}
				kind, err := genericapi.GetResourceKind(gv, store, g.Scheme)
				if err != nil {
					return nil, err
				}
				sample, err := g.Scheme.New(kind)
				if err != nil {
					return nil, err
				}
				names = append(names, openapiutil.GetCanonicalTypeName(sample))
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	key := converterKey{definitions: reflect.ValueOf(config.Definitions).UnsafePointer(), types: strings.Join(names, ",")}

	typeConverters.Lock()
	defer typeConverters.Unlock()
	if c, ok := typeConverters.byTypes[key]; ok {
		return c, nil
	}
	models, err := builder3.BuildOpenAPIDefinitionsForResources(config, names...)
	if err != nil {
		return nil, err
	}
	c, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, err
	}
	typeConverters.byTypes[key] = c
	return c, nil
}
