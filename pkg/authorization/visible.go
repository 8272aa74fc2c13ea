package authorization

import (
	"slices"
	"strings"
	"sync"

	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
)

// The default ClusterRoles and ClusterRoleBindings as the RBAC API serves
// them (internal version), so that `kubectl get clusterroles` shows them in
// every heaven although no heaven stores them.

type visibleDefaults struct {
	clusterRoles        []*rbac.ClusterRole
	clusterRoleBindings []*rbac.ClusterRoleBinding
}

var visible = sync.OnceValue(func() *visibleDefaults {
	d := defaults()
	v := &visibleDefaults{}
	for _, r := range d.clusterRoles {
		out := &rbac.ClusterRole{}
		if err := rbacv1helpers.Convert_v1_ClusterRole_To_rbac_ClusterRole(r, out, nil); err != nil {
			panic(err) // Kubernetes' own defaults convert
		}
		v.clusterRoles = append(v.clusterRoles, out)
	}
	for _, b := range d.clusterRoleBindings {
		out := &rbac.ClusterRoleBinding{}
		if err := rbacv1helpers.Convert_v1_ClusterRoleBinding_To_rbac_ClusterRoleBinding(b, out, nil); err != nil {
			panic(err)
		}
		v.clusterRoleBindings = append(v.clusterRoleBindings, out)
	}
	slices.SortFunc(v.clusterRoles, func(a, b *rbac.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(v.clusterRoleBindings, func(a, b *rbac.ClusterRoleBinding) int { return strings.Compare(a.Name, b.Name) })
	return v
})

// DefaultClusterRoles are the default ClusterRoles, sorted by name; they
// are shared: copy one before changing it.
func DefaultClusterRoles() []*rbac.ClusterRole { return visible().clusterRoles }

// DefaultClusterRoleBindings are the default ClusterRoleBindings, sorted
// by name; shared as DefaultClusterRoles.
func DefaultClusterRoleBindings() []*rbac.ClusterRoleBinding { return visible().clusterRoleBindings }
