package authorization

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
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
// It reads the heaven's watch caches (resourceVersion 0), as kube-apiserver's
// RBAC authorizer reads its informers: a binding is in effect once the
// heaven's cache has it, within milliseconds of its write.
type Policy struct {
	stores atomic.Pointer[Stores]
	// The snapshot of the stored policy and what keeps it current
	// (snapshot.go).
	watching   atomic.Int32 // watches running, of the 4 stores
	generation atomic.Int64 // moves on every change the watches see
	snap       atomic.Pointer[snapshot]
	mu         sync.Mutex // one snapshot built at a time
}

// view is the policy's answers: a current snapshot, or the stores.
type view interface {
	rbacregistryvalidation.RoleGetter
	rbacregistryvalidation.RoleBindingLister
	rbacregistryvalidation.ClusterRoleGetter
	rbacregistryvalidation.ClusterRoleBindingLister
}

// GetRole is the stored Role, or else the default one.
func (p *Policy) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	return v.GetRole(ctx, namespace, name)
}

// ListRoleBindings is the namespace's stored RoleBindings and the default
// ones they do not replace.
func (p *Policy) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	return v.ListRoleBindings(ctx, namespace)
}

// GetClusterRole is the stored ClusterRole, or else the default one,
// aggregated.
func (p *Policy) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	return v.GetClusterRole(ctx, name)
}

// ListClusterRoleBindings is the stored ClusterRoleBindings and the
// default ones they do not replace.
func (p *Policy) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	v, err := p.view(ctx)
	if err != nil {
		return nil, err
	}
	return v.ListClusterRoleBindings(ctx)
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

// cached is the options of a read from the watch cache.
var cached = &metav1.GetOptions{ResourceVersion: "0"}

func cachedList() *metainternalversion.ListOptions {
	return &metainternalversion.ListOptions{ResourceVersion: "0"}
}

// live reads the stores at every question: what a Policy does until its
// watches keep a snapshot current (snapshot.go).
type live struct{ s *Stores }

// GetRole is the stored Role, or else the default one.
func (l live) GetRole(ctx context.Context, namespace, name string) (*rbacv1.Role, error) {
	s := l.s
	obj, err := s.Roles.Get(genericapirequest.WithNamespace(ctx, namespace), name, cached)
	if apierrors.IsNotFound(err) {
		if r, ok := defaults().roles[namespace][name]; ok {
			return r, nil
		}
	}
	if err != nil {
		return nil, err
	}
	out := &rbacv1.Role{}
	return out, rbacv1helpers.Convert_rbac_Role_To_v1_Role(obj.(*rbac.Role), out, nil)
}

// ListRoleBindings is the namespace's stored RoleBindings and the default
// ones they do not replace.
func (l live) ListRoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	obj, err := l.s.RoleBindings.List(genericapirequest.WithNamespace(ctx, namespace), cachedList())
	if err != nil {
		return nil, err
	}
	items := obj.(*rbac.RoleBindingList).Items
	out := make([]*rbacv1.RoleBinding, 0, len(items))
	stored := map[string]bool{}
	for i := range items {
		b := &rbacv1.RoleBinding{}
		if err := rbacv1helpers.Convert_rbac_RoleBinding_To_v1_RoleBinding(&items[i], b, nil); err != nil {
			return nil, err
		}
		stored[b.Name] = true
		out = append(out, b)
	}
	for _, b := range defaults().roleBindings[namespace] {
		if !stored[b.Name] {
			out = append(out, b)
		}
	}
	return out, nil
}

// GetClusterRole is the stored ClusterRole, or else the default one. An
// aggregated role has the rules of the roles it selects, stored or default,
// at the time of asking.
func (l live) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	s := l.s
	ctx = genericapirequest.WithNamespace(ctx, "")
	obj, err := s.ClusterRoles.Get(ctx, name, cached)
	var role *rbacv1.ClusterRole
	switch {
	case apierrors.IsNotFound(err):
		d, ok := defaults().clusterRoles[name]
		if !ok {
			return nil, err
		}
		role = d
	case err != nil:
		return nil, err
	default:
		role = &rbacv1.ClusterRole{}
		if err := rbacv1helpers.Convert_rbac_ClusterRole_To_v1_ClusterRole(obj.(*rbac.ClusterRole), role, nil); err != nil {
			return nil, err
		}
	}
	if role.AggregationRule == nil {
		return role, nil
	}
	stored, err := storedClusterRoles(ctx, s)
	if err != nil {
		return nil, err
	}
	if obj == nil && !changesDefaults(stored, role.AggregationRule) {
		return role, nil // a default role, aggregated when the defaults were made
	}
	return aggregate(role, defaults().clusterRoleList(stored)), nil
}

// changesDefaults says whether the stored roles make an aggregation of the
// default roles by rule different: one of them is selected, or takes a
// default's place.
func changesDefaults(stored []*rbacv1.ClusterRole, rule *rbacv1.AggregationRule) bool {
	for _, r := range stored {
		if _, ok := defaults().clusterRoles[r.Name]; ok {
			return true
		}
	}
	return len(selected(rule, stored)) > 0
}

func storedClusterRoles(ctx context.Context, s *Stores) ([]*rbacv1.ClusterRole, error) {
	obj, err := s.ClusterRoles.List(ctx, cachedList())
	if err != nil {
		return nil, err
	}
	items := obj.(*rbac.ClusterRoleList).Items
	out := make([]*rbacv1.ClusterRole, 0, len(items))
	for i := range items {
		r := &rbacv1.ClusterRole{}
		if err := rbacv1helpers.Convert_rbac_ClusterRole_To_v1_ClusterRole(&items[i], r, nil); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// ListClusterRoleBindings is the stored ClusterRoleBindings and the
// default ones they do not replace.
func (l live) ListClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	obj, err := l.s.ClusterRoleBindings.List(genericapirequest.WithNamespace(ctx, ""), cachedList())
	if err != nil {
		return nil, err
	}
	items := obj.(*rbac.ClusterRoleBindingList).Items
	out := make([]*rbacv1.ClusterRoleBinding, 0, len(items)+len(defaults().clusterRoleBindings))
	stored := map[string]bool{}
	for i := range items {
		b := &rbacv1.ClusterRoleBinding{}
		if err := rbacv1helpers.Convert_rbac_ClusterRoleBinding_To_v1_ClusterRoleBinding(&items[i], b, nil); err != nil {
			return nil, err
		}
		stored[b.Name] = true
		out = append(out, b)
	}
	for _, b := range defaults().clusterRoleBindings {
		if !stored[b.Name] {
			out = append(out, b)
		}
	}
	return out, nil
}
