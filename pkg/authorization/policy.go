package authorization

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apiserver/pkg/registry/rest"
	rbacregistryvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
)

// Stores are a heaven's RBAC REST stores, read by its Policy.
type Stores struct {
	Roles, RoleBindings, ClusterRoles, ClusterRoleBindings rest.StandardStorage
}

// Policy is the RBAC policy of one heaven: its stored Roles, ClusterRoles
// and bindings, over Kubernetes' default ones. It answers the getters and
// listers of Kubernetes' RBAC rule resolver, so that the authorizer and the
// RBAC API's escalation checks see the same roles.
//
// It answers from a snapshot of the heaven's watch caches (resourceVersion
// 0), converted once and kept while its watches see no change
// (snapshot.go): what kube-apiserver's RBAC authorizer gets from its
// informers, without a second copy of the objects. A binding is in effect
// once the heaven's cache has it, within milliseconds of its write.
type Policy struct {
	stores     atomic.Pointer[Stores]
	watching   atomic.Bool  // the watch of changes runs (Run)
	generation atomic.Int64 // moves on every change the watches see
	snap       atomic.Pointer[snapshot]
	mu         sync.Mutex // one snapshot built at a time
}

var (
	_ rbacregistryvalidation.RoleGetter               = &Policy{}
	_ rbacregistryvalidation.RoleBindingLister        = &Policy{}
	_ rbacregistryvalidation.ClusterRoleGetter        = &Policy{}
	_ rbacregistryvalidation.ClusterRoleBindingLister = &Policy{}
)

// errNotBound is what a Policy answers until its heaven's stores exist.
var errNotBound = errors.New("the heaven's RBAC storage is not ready")

// Bind makes the policy read s. A heaven binds its stores once, when it
// builds them, after its authorizer already exists.
func (p *Policy) Bind(s Stores) { p.stores.Store(&s) }

func (p *Policy) bound() (*Stores, error) {
	s := p.stores.Load()
	if s == nil {
		return nil, errNotBound
	}
	return s, nil
}

// GetRole is the stored Role, or else the default one.
func (p *Policy) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	snap, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.GetRole(ctx, namespace, name)
}

// ListRoleBindings is the namespace's stored RoleBindings and the default
// ones they do not replace.
func (p *Policy) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	snap, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.ListRoleBindings(ctx, namespace)
}

// GetClusterRole is the stored ClusterRole, or else the default one; an
// aggregated role has the rules of the roles it selects, stored or default.
func (p *Policy) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	snap, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.GetClusterRole(ctx, name)
}

// ListClusterRoleBindings is the stored ClusterRoleBindings and the
// default ones they do not replace.
func (p *Policy) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	snap, err := p.current(ctx)
	if err != nil {
		return nil, err
	}
	return snap.ListClusterRoleBindings(ctx)
}

// cachedList is the options of a list from the watch cache.
func cachedList() *metainternalversion.ListOptions {
	return &metainternalversion.ListOptions{ResourceVersion: "0"}
}
