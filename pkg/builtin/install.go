// Package builtin serves Kubernetes' built-in resources from k8s.io/api types.
//
// What Kubernetes decides is Kubernetes' own code: defaults
// (k8s.io/kubernetes/pkg/apis/*/v1 defaulters, in the scheme), validation
// (k8s.io/kubernetes/pkg/apis/*/validation) and table columns
// (k8s.io/kubernetes/pkg/printers), reached by converting to Kubernetes'
// internal types with its own conversions. Hand-written here, until heavens
// serve kube-apiserver's registries themselves: the stores and strategies
// (which objects' fields a write may set), because upstream's operate on
// the internal types that a heaven does not store.
package builtin

import (
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/heaven-dev/heaven/pkg/builtin/registry/configmap"
	"github.com/heaven-dev/heaven/pkg/builtin/registry/deployment"
	"github.com/heaven-dev/heaven/pkg/builtin/registry/event"
	eventsv1registry "github.com/heaven-dev/heaven/pkg/builtin/registry/eventsv1"
	"github.com/heaven-dev/heaven/pkg/builtin/registry/lease"
	"github.com/heaven-dev/heaven/pkg/builtin/registry/namespace"
	"github.com/heaven-dev/heaven/pkg/builtin/registry/secret"
	"github.com/heaven-dev/heaven/pkg/builtin/registry/serviceaccount"
	"github.com/heaven-dev/heaven/pkg/builtin/scheme"
)

// Resource is one served built-in resource.
type Resource struct {
	GroupResource schema.GroupResource
	// StorageVersion is the version objects are encoded at in storage.
	StorageVersion schema.GroupVersion
	Namespaced     bool
}

// Resources lists every built-in GroupResource served, with its storage GroupVersion (for the storage codec).
func Resources() []Resource {
	core := func(r string, namespaced bool) Resource {
		return Resource{corev1.Resource(r), corev1.SchemeGroupVersion, namespaced}
	}
	return []Resource{
		core("namespaces", false),
		core("configmaps", true),
		core("secrets", true),
		core("serviceaccounts", true),
		core("events", true),
		{eventsv1.Resource("events"), eventsv1.SchemeGroupVersion, true},
		{coordinationv1.Resource("leases"), coordinationv1.SchemeGroupVersion, true},
		{appsv1.Resource("deployments"), appsv1.SchemeGroupVersion, true},
	}
}

// APIGroupInfos returns the REST storage of every built-in resource, ready for
// GenericAPIServer.InstallLegacyAPIGroup("/api", legacy) and InstallAPIGroups(groups...).
func APIGroupInfos(optsGetter generic.RESTOptionsGetter) (legacy *genericapiserver.APIGroupInfo, groups []*genericapiserver.APIGroupInfo, err error) {
	var b builder
	defer func() {
		if err != nil {
			b.destroy()
		}
	}()
	namespaces, namespaceStatus, namespaceFinalize, err := namespace.NewREST(optsGetter)
	if err != nil {
		return nil, nil, err
	}
	b.add(namespaces)
	deployments, err := deployment.NewREST(optsGetter)
	if err != nil {
		return nil, nil, err
	}
	b.add(deployments.Deployment)
	core := map[string]rest.Storage{
		"namespaces":          namespaces,
		"namespaces/status":   namespaceStatus,
		"namespaces/finalize": namespaceFinalize,
		"configmaps":          b.build(func() (rest.Storage, error) { return configmap.NewREST(optsGetter) }),
		"secrets":             b.build(func() (rest.Storage, error) { return secret.NewREST(optsGetter) }),
		"serviceaccounts":     b.build(func() (rest.Storage, error) { return serviceaccount.NewREST(optsGetter) }),
		"events":              b.build(func() (rest.Storage, error) { return event.NewREST(optsGetter) }),
	}
	apps := map[string]rest.Storage{
		"deployments":        deployments.Deployment,
		"deployments/status": deployments.Status,
		"deployments/scale":  deployments.Scale,
	}
	events := map[string]rest.Storage{
		"events": b.build(func() (rest.Storage, error) { return eventsv1registry.NewREST(optsGetter) }),
	}
	coordination := map[string]rest.Storage{
		"leases": b.build(func() (rest.Storage, error) { return lease.NewREST(optsGetter) }),
	}
	if b.err != nil {
		return nil, nil, b.err
	}
	groups = []*genericapiserver.APIGroupInfo{
		groupInfo(appsv1.SchemeGroupVersion, apps),
		groupInfo(eventsv1.SchemeGroupVersion, events),
		groupInfo(coordinationv1.SchemeGroupVersion, coordination),
	}
	return groupInfo(corev1.SchemeGroupVersion, core), groups, nil
}

// builder keeps the first error of a run of NewREST calls and what they built,
// so a failure part-way releases the storage already opened.
type builder struct {
	built []rest.Storage
	err   error
}

func (b *builder) add(s rest.Storage) { b.built = append(b.built, s) }

func (b *builder) build(newREST func() (rest.Storage, error)) rest.Storage {
	if b.err != nil {
		return nil
	}
	s, err := newREST()
	if err != nil {
		b.err = err
		return nil
	}
	b.add(s)
	return s
}

func (b *builder) destroy() {
	for _, s := range b.built {
		s.Destroy()
	}
}

func groupInfo(gv schema.GroupVersion, storage map[string]rest.Storage) *genericapiserver.APIGroupInfo {
	info := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, scheme.Scheme, scheme.ParameterCodec, scheme.Codecs)
	info.VersionedResourcesStorageMap[gv.Version] = storage
	return &info
}
