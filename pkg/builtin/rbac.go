package builtin

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/rbac"
	clusterrolepolicybased "k8s.io/kubernetes/pkg/registry/rbac/clusterrole/policybased"
	clusterrolestore "k8s.io/kubernetes/pkg/registry/rbac/clusterrole/storage"
	clusterrolebindingpolicybased "k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding/policybased"
	clusterrolebindingstore "k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding/storage"
	rolepolicybased "k8s.io/kubernetes/pkg/registry/rbac/role/policybased"
	rolestore "k8s.io/kubernetes/pkg/registry/rbac/role/storage"
	rolebindingpolicybased "k8s.io/kubernetes/pkg/registry/rbac/rolebinding/policybased"
	rolebindingstore "k8s.io/kubernetes/pkg/registry/rbac/rolebinding/storage"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"

	"github.com/heaven-dev/heaven/pkg/authorization"
)

// rbacProvider serves rbac.authorization.k8s.io/v1 with kube-apiserver's
// stores and escalation checks (the policybased storages), as
// k8s.io/kubernetes/pkg/registry/rbac/rest does, with one difference: the
// escalation checks resolve roles through the heaven's Policy, so that
// Kubernetes' default roles, which a heaven serves without storing
// (pkg/authorization), count there as they count for the authorizer. The
// upstream provider resolves through the stores alone and writes the
// defaults into storage with a post-start hook instead. Gets and lists show
// the defaults (rbacdefaults.go).
type rbacProvider struct {
	Authorizer authorizer.Authorizer
	Policy     *authorization.Policy
}

func (rbacProvider) GroupName() string { return rbac.GroupName }

func (p rbacProvider) NewRESTStorage(resources serverstorage.APIResourceConfigSource, optsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(rbac.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	roles, err := rolestore.NewREST(optsGetter)
	if err != nil {
		return info, err
	}
	roleBindings, err := rolebindingstore.NewREST(optsGetter)
	if err != nil {
		return info, err
	}
	clusterRoles, err := clusterrolestore.NewREST(optsGetter)
	if err != nil {
		return info, err
	}
	clusterRoleBindings, err := clusterrolebindingstore.NewREST(optsGetter)
	if err != nil {
		return info, err
	}
	p.Policy.Bind(authorization.Stores{Roles: roles, RoleBindings: roleBindings, ClusterRoles: clusterRoles, ClusterRoleBindings: clusterRoleBindings})
	resolver := rbacregistryvalidation.NewDefaultRuleResolver(p.Policy, p.Policy, p.Policy, p.Policy)

	storage := map[string]rest.Storage{}
	for resource, s := range map[string]rest.Storage{
		"roles":               rolepolicybased.NewStorage(roles, p.Authorizer, resolver),
		"rolebindings":        rolebindingpolicybased.NewStorage(roleBindings, p.Authorizer, resolver),
		"clusterroles":        clusterRolesWithDefaults{clusterrolepolicybased.NewStorage(clusterRoles, p.Authorizer, resolver)},
		"clusterrolebindings": clusterRoleBindingsWithDefaults{clusterrolebindingpolicybased.NewStorage(clusterRoleBindings, p.Authorizer, resolver)},
	} {
		if resources.ResourceEnabled(rbacv1.SchemeGroupVersion.WithResource(resource)) {
			storage[resource] = s
		}
	}
	if len(storage) > 0 {
		info.VersionedResourcesStorageMap[rbacv1.SchemeGroupVersion.Version] = storage
	}
	return info, nil
}
