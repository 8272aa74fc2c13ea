package authorization

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

func allows(role *rbacv1.ClusterRole, verb, group, resource string) bool {
	return rbac.RulesAllow(authorizer.AttributesRecord{
		User: &user.DefaultInfo{Name: "x"}, Verb: verb, APIGroup: group, Resource: resource, ResourceRequest: true,
	}, role.Rules...)
}

// The default roles are aggregated as kube-controller-manager aggregates
// them: admin holds edit's rules, which hold view's.
func TestDefaultRolesAreAggregated(t *testing.T) {
	d := defaults()
	for _, tc := range []struct {
		role, verb, group, resource string
		want                        bool
	}{
		{"view", "list", "", "configmaps", true},
		{"view", "list", "", "secrets", false},
		{"view", "create", "", "configmaps", false},
		{"edit", "list", "", "configmaps", true}, // from view
		{"edit", "create", "", "configmaps", true},
		{"edit", "create", "rbac.authorization.k8s.io", "rolebindings", false},
		{"admin", "list", "", "configmaps", true},        // from view, through edit
		{"admin", "delete", "apps", "deployments", true}, // from edit
		{"admin", "create", "rbac.authorization.k8s.io", "rolebindings", true},
		{"admin", "create", "", "namespaces", false},
		{"cluster-admin", "create", "", "namespaces", true},
	} {
		role, ok := d.clusterRoles[tc.role]
		require.True(t, ok, tc.role)
		assert.Equal(t, tc.want, allows(role, tc.verb, tc.group, tc.resource), "%s %s %s/%s", tc.role, tc.verb, tc.group, tc.resource)
	}
	for _, name := range []string{"cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer", administratorsBinding} {
		found := false
		for _, b := range d.clusterRoleBindings {
			found = found || b.Name == name
		}
		assert.True(t, found, "default binding %s", name)
	}
}

func TestAggregateIsTransitiveAndEndsOnCycles(t *testing.T) {
	rule := func(resource string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{resource}}
	}
	aggregating := func(name, selects string, labels map[string]string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: name, Labels: labels},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{selects: "true"}}}},
		}
	}
	leaf := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "leaf", Labels: map[string]string{"to-b": "true"}}, Rules: []rbacv1.PolicyRule{rule("pods")}}
	twin := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "twin", Labels: map[string]string{"to-a": "true", "to-b": "true"}}, Rules: []rbacv1.PolicyRule{rule("pods"), rule("secrets")}}
	a := aggregating("a", "to-a", map[string]string{"to-b": "true"})
	b := aggregating("b", "to-b", map[string]string{"to-a": "true"}) // a and b select each other
	roles := []*rbacv1.ClusterRole{leaf, twin, a, b}

	got := aggregate(a, roles)
	assert.ElementsMatch(t, []rbacv1.PolicyRule{rule("pods"), rule("secrets")}, got.Rules, "a gets b's (leaf's and twin's) rules once each")
	assert.Nil(t, a.Rules, "the role given is not changed")
	assert.Same(t, leaf, aggregate(leaf, roles), "a role that does not aggregate is itself")
}
