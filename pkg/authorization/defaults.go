package authorization

import (
	"slices"
	"strings"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// AdministratorsGroup is, besides system:masters, the group of server
// administrators: allowed everything in every heaven.
const AdministratorsGroup = "heaven:admins"

// administratorsBinding binds cluster-admin to AdministratorsGroup in every
// heaven, so that RBAC's own answers (auth can-i --list, escalation checks)
// know administrators as the authorizer does.
const administratorsBinding = "heaven:admins"

// defaultPolicy is Kubernetes' bootstrap RBAC policy, the objects
// kube-apiserver writes into every new cluster (cluster-admin, admin, edit,
// view, system:discovery, the controllers' roles…). Every heaven serves
// them without storing them: one copy in memory for all heavens. A stored
// object of the same name takes a default's place in its heaven.
type defaultPolicy struct {
	clusterRoles        map[string]*rbacv1.ClusterRole
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roles               map[string]map[string]*rbacv1.Role // namespace → name
	roleBindings        map[string][]*rbacv1.RoleBinding   // namespace
}

var defaults = sync.OnceValue(newDefaultPolicy)

func newDefaultPolicy() *defaultPolicy {
	p := &defaultPolicy{
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roles:        map[string]map[string]*rbacv1.Role{},
		roleBindings: map[string][]*rbacv1.RoleBinding{},
	}
	for _, r := range append(append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...), historyRoles()...) {
		p.clusterRoles[r.Name] = &r
	}
	// What kube-controller-manager's aggregation controller writes into
	// admin, edit and view is computed once.
	all := p.clusterRoleList(nil)
	for name, r := range p.clusterRoles {
		p.clusterRoles[name] = aggregate(r, all)
	}
	for _, b := range append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...) {
		p.clusterRoleBindings = append(p.clusterRoleBindings, &b)
	}
	admins := rbacv1helpers.NewClusterBinding("cluster-admin").Groups(AdministratorsGroup).BindingOrDie()
	admins.Name = administratorsBinding
	p.clusterRoleBindings = append(p.clusterRoleBindings, &admins)

	for ns, roles := range bootstrappolicy.NamespaceRoles() {
		p.roles[ns] = map[string]*rbacv1.Role{}
		for _, r := range roles {
			p.roles[ns][r.Name] = &r
		}
	}
	for ns, bindings := range bootstrappolicy.NamespaceRoleBindings() {
		for _, b := range bindings {
			p.roleBindings[ns] = append(p.roleBindings[ns], &b)
		}
	}
	return p
}

// historyRoles give the history.heaven.dev API to Kubernetes' default
// roles, by aggregation as Kubernetes' own groups get there: view reads
// history and diffs, edit and admin also revert, restore and merge.
func historyRoles() []rbacv1.ClusterRole {
	const group = "history.heaven.dev"
	aggregate := func(roles ...string) map[string]string {
		labels := map[string]string{}
		for _, r := range roles {
			labels["rbac.authorization.k8s.io/aggregate-to-"+r] = "true"
		}
		return labels
	}
	return []rbacv1.ClusterRole{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "heaven:history:view", Labels: aggregate("view", "edit", "admin")},
			Rules: []rbacv1.PolicyRule{
				rbacv1helpers.NewRule("get", "list").Groups(group).Resources("commits").RuleOrDie(),
				rbacv1helpers.NewRule("create").Groups(group).Resources("diffs").RuleOrDie(),
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "heaven:history:edit", Labels: aggregate("edit", "admin")},
			Rules:      []rbacv1.PolicyRule{rbacv1helpers.NewRule("create").Groups(group).Resources("reverts", "restores", "merges").RuleOrDie()},
		},
	}
}

// clusterRoleList is the default cluster roles that stored does not
// replace, followed by stored.
func (p *defaultPolicy) clusterRoleList(stored []*rbacv1.ClusterRole) []*rbacv1.ClusterRole {
	replaced := map[string]bool{}
	for _, r := range stored {
		replaced[r.Name] = true
	}
	out := make([]*rbacv1.ClusterRole, 0, len(p.clusterRoles)+len(stored))
	for name, r := range p.clusterRoles {
		if !replaced[name] {
			out = append(out, r)
		}
	}
	return append(out, stored...)
}

// aggregate returns role with the rules of the roles its aggregation rule
// selects among roles, as kube-controller-manager's ClusterRole aggregation
// controller fills them in: transitively (admin selects edit, which selects
// view) and without repeating a rule. A role that does not aggregate is
// returned as it is.
func aggregate(role *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole) *rbacv1.ClusterRole {
	if role.AggregationRule == nil {
		return role
	}
	roles = slices.SortedFunc(slices.Values(roles), func(a, b *rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
	out := role.DeepCopy()
	out.Rules = nil
	for _, r := range gather(role, roles, map[string]bool{role.Name: true}) {
		if !slices.ContainsFunc(out.Rules, func(have rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(have, r) }) {
			out.Rules = append(out.Rules, r)
		}
	}
	return out
}

// gather is the rules of role, through the roles it aggregates; visiting
// holds the roles on the way to it, so that a cycle ends.
func gather(role *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole, visiting map[string]bool) []rbacv1.PolicyRule {
	if role.AggregationRule == nil {
		return role.Rules
	}
	var rules []rbacv1.PolicyRule
	for _, r := range selected(role.AggregationRule, roles) {
		if visiting[r.Name] {
			continue
		}
		visiting[r.Name] = true
		rules = append(rules, gather(r, roles, visiting)...)
		delete(visiting, r.Name)
	}
	return rules
}

// selected is the roles that one of rule's selectors matches, each once.
func selected(rule *rbacv1.AggregationRule, roles []*rbacv1.ClusterRole) []*rbacv1.ClusterRole {
	var out []*rbacv1.ClusterRole
	seen := map[string]bool{}
	for _, s := range rule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&s)
		if err != nil {
			continue // validation refuses such a selector
		}
		for _, r := range roles {
			if !seen[r.Name] && selector.Matches(labels.Set(r.Labels)) {
				seen[r.Name] = true
				out = append(out, r)
			}
		}
	}
	return out
}
