package authorization

import (
	"context"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
)

// A Policy answers from a snapshot of the heaven's stored Roles,
// ClusterRoles and bindings, converted once, for as long as its watches of
// the four stores see no change: what kube-apiserver's RBAC authorizer gets
// from its informers, without a second copy of the objects. Until the
// watches run (Run), and whenever one is down, it reads the stores at every
// question (live).

// Run keeps the policy's snapshot current until ctx ends.
func (p *Policy) Run(ctx context.Context) {
	s, err := p.bound()
	if err != nil {
		return
	}
	for _, store := range []rest.Watcher{s.Roles, s.RoleBindings, s.ClusterRoles, s.ClusterRoleBindings} {
		go p.watch(ctx, store)
	}
}

// watch counts the changes of one store, watching again after a watch ends.
func (p *Policy) watch(ctx context.Context, store rest.Watcher) {
	backoff := wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 10 * time.Second}
	ctx = genericapirequest.WithNamespace(ctx, "")
	for ctx.Err() == nil {
		w, err := store.Watch(ctx, cachedList())
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff.Step()):
			}
			continue
		}
		// Changes made before the watch began are in its first events.
		p.generation.Add(1)
		p.watching.Add(1)
		for range w.ResultChan() {
			p.generation.Add(1)
		}
		p.watching.Add(-1)
		p.generation.Add(1)
		w.Stop()
	}
}

// view is a current snapshot when the watches run, else the stores.
func (p *Policy) view(ctx context.Context) (view, error) {
	s, err := p.bound()
	if err != nil {
		return nil, err
	}
	if p.watching.Load() < 4 {
		return live{s}, nil
	}
	gen := p.generation.Load()
	if snap := p.snap.Load(); snap != nil && snap.generation == gen {
		return snap, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	gen = p.generation.Load()
	if snap := p.snap.Load(); snap != nil && snap.generation == gen {
		return snap, nil
	}
	snap, err := newSnapshot(ctx, s, gen)
	if err != nil {
		return nil, err
	}
	p.snap.Store(snap)
	return snap, nil
}

// snapshot is the policy at one generation: stored objects over defaults.
type snapshot struct {
	generation          int64
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	clusterRoles        map[string]*rbacv1.ClusterRole // stored
	storedClusterRoles  []*rbacv1.ClusterRole
	roles               map[string]map[string]*rbacv1.Role
	roleBindings        map[string][]*rbacv1.RoleBinding // by namespace, defaults included

	mu         sync.Mutex
	aggregated map[string]*rbacv1.ClusterRole
}

func newSnapshot(ctx context.Context, s *Stores, gen int64) (*snapshot, error) {
	ctx = genericapirequest.WithNamespace(ctx, "") // every namespace
	snap := &snapshot{
		generation:   gen,
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roles:        map[string]map[string]*rbacv1.Role{},
		roleBindings: map[string][]*rbacv1.RoleBinding{},
		aggregated:   map[string]*rbacv1.ClusterRole{},
	}
	d := defaults()

	obj, err := s.ClusterRoleBindings.List(ctx, cachedList())
	if err != nil {
		return nil, err
	}
	stored := map[string]bool{}
	for i, item := range obj.(*rbac.ClusterRoleBindingList).Items {
		b := &rbacv1.ClusterRoleBinding{}
		if err := rbacv1helpers.Convert_rbac_ClusterRoleBinding_To_v1_ClusterRoleBinding(&obj.(*rbac.ClusterRoleBindingList).Items[i], b, nil); err != nil {
			return nil, err
		}
		stored[item.Name] = true
		snap.clusterRoleBindings = append(snap.clusterRoleBindings, b)
	}
	for _, b := range d.clusterRoleBindings {
		if !stored[b.Name] {
			snap.clusterRoleBindings = append(snap.clusterRoleBindings, b)
		}
	}

	if snap.storedClusterRoles, err = storedClusterRoles(ctx, s); err != nil {
		return nil, err
	}
	for _, r := range snap.storedClusterRoles {
		snap.clusterRoles[r.Name] = r
	}

	if obj, err = s.Roles.List(ctx, cachedList()); err != nil {
		return nil, err
	}
	for ns, roles := range d.roles {
		snap.roles[ns] = map[string]*rbacv1.Role{}
		for name, r := range roles {
			snap.roles[ns][name] = r
		}
	}
	for i := range obj.(*rbac.RoleList).Items {
		r := &rbacv1.Role{}
		if err := rbacv1helpers.Convert_rbac_Role_To_v1_Role(&obj.(*rbac.RoleList).Items[i], r, nil); err != nil {
			return nil, err
		}
		if snap.roles[r.Namespace] == nil {
			snap.roles[r.Namespace] = map[string]*rbacv1.Role{}
		}
		snap.roles[r.Namespace][r.Name] = r
	}

	if obj, err = s.RoleBindings.List(ctx, cachedList()); err != nil {
		return nil, err
	}
	storedBindings := map[string]bool{}
	for i := range obj.(*rbac.RoleBindingList).Items {
		b := &rbacv1.RoleBinding{}
		if err := rbacv1helpers.Convert_rbac_RoleBinding_To_v1_RoleBinding(&obj.(*rbac.RoleBindingList).Items[i], b, nil); err != nil {
			return nil, err
		}
		storedBindings[b.Namespace+"/"+b.Name] = true
		snap.roleBindings[b.Namespace] = append(snap.roleBindings[b.Namespace], b)
	}
	for ns, bindings := range d.roleBindings {
		for _, b := range bindings {
			if !storedBindings[ns+"/"+b.Name] {
				snap.roleBindings[ns] = append(snap.roleBindings[ns], b)
			}
		}
	}
	return snap, nil
}

func (s *snapshot) GetRole(_ context.Context, namespace, name string) (*rbacv1.Role, error) {
	if r, ok := s.roles[namespace][name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(rbac.Resource("roles"), name)
}

func (s *snapshot) ListRoleBindings(_ context.Context, namespace string) ([]*rbacv1.RoleBinding, error) {
	return s.roleBindings[namespace], nil
}

func (s *snapshot) ListClusterRoleBindings(context.Context) ([]*rbacv1.ClusterRoleBinding, error) {
	return s.clusterRoleBindings, nil
}

func (s *snapshot) GetClusterRole(_ context.Context, name string) (*rbacv1.ClusterRole, error) {
	role, stored := s.clusterRoles[name]
	if !stored {
		d, ok := defaults().clusterRoles[name]
		if !ok {
			return nil, apierrors.NewNotFound(rbac.Resource("clusterroles"), name)
		}
		role = d
	}
	if role.AggregationRule == nil || (!stored && !changesDefaults(s.storedClusterRoles, role.AggregationRule)) {
		return role, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.aggregated[name]; ok {
		return a, nil
	}
	a := aggregate(role, defaults().clusterRoleList(s.storedClusterRoles))
	s.aggregated[name] = a
	return a, nil
}
