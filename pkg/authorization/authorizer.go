// Package authorization decides who may do what in a heaven. Each heaven is
// its own RBAC domain: server administrators (system:masters and
// heaven:admins) may do everything in every heaven; everybody else what the
// heaven's own Roles, ClusterRoles and bindings grant, evaluated by
// Kubernetes' RBAC authorizer. Kubernetes' default roles and bindings
// (cluster-admin, admin, edit, view, system:discovery, …) are part of every
// heaven's policy without being stored in it (defaults.go), as kcp serves
// its bootstrap policy: a binding in team-a to "edit" grants what edit
// grants, in team-a only.
package authorization

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

// Named is an authorizer consulted before RBAC, with the name its
// reasons are given under.
type Named = union.NamedAuthorizer

// New returns the authorizer and rule resolver of a heaven whose RBAC
// policy is p: administrators first (no lookup at all), then a refusal to
// let anybody else act as a member of a protected group (besides
// system:masters and heaven:admins), then before, then RBAC.
func New(p *Policy, protected []string, before ...Named) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	rbacAuthorizer := rbac.New(p, p, p, p)
	chain := []Named{
		{AuthorizerName: "administrators", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup, AdministratorsGroup)},
		{AuthorizerName: "protected-groups", Authorizer: protectGroups(append([]string{user.SystemPrivilegedGroup, AdministratorsGroup}, protected...))},
	}
	chain = append(chain, before...)
	chain = append(chain, Named{AuthorizerName: "rbac", Authorizer: rbacAuthorizer})
	a, err := union.New(chain...)
	if err != nil {
		return nil, nil, err
	}
	return a, rbacAuthorizer, nil
}

// protectGroups denies impersonating a member of groups: RBAC may let a
// tenant impersonate ("*" on "*", as cluster-admin of its heaven does),
// but never into a group that heaven-server trusts beyond RBAC.
func protectGroups(groups []string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		// "impersonate", and constrained impersonation's "impersonate:user-info"…
		if !strings.HasPrefix(a.GetVerb(), "impersonate") || a.GetResource() != "groups" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		if slices.Contains(groups, a.GetName()) {
			return authorizer.DecisionDeny, fmt.Sprintf("only server administrators may act as members of %s", a.GetName()), nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

// IsAdministrator says whether u is a server administrator.
func IsAdministrator(u user.Info) bool {
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup || g == AdministratorsGroup {
			return true
		}
	}
	return false
}
