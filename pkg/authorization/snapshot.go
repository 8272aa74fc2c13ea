package authorization

import (
	"context"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/apis/rbac"
	rbacv1helpers "k8s.io/kubernetes/pkg/apis/rbac/v1"
)

// A Policy answers from a snapshot of the heaven's stored Roles,
// ClusterRoles and bindings, converted once, for as long as its watch (Run)
// sees no change. Until the watch runs, and whenever it is down, nothing
// says when a snapshot goes stale: each question gets a snapshot of its own.

// Changes watches a heaven's Roles, ClusterRoles and bindings at once,
// below their stores (one watch, where a watch through each REST store is a
// chain of the API server's goroutines and buffers): the channel receives on
// every change after the call began and closes when the watch ends.
type Changes func(ctx context.Context) clientv3.WatchChan

// Run keeps the policy's snapshot current until ctx ends, watching changes
// again after a watch ends (at once after a long watch, later after a short
// one).
func (p *Policy) Run(ctx context.Context, changes Changes) {
	go func() {
		newBackoff := func() wait.Backoff {
			return wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 10, Cap: 10 * time.Second}
		}
		backoff := newBackoff()
		for ctx.Err() == nil {
			wctx, cancel := context.WithCancel(ctx)
			began := time.Now()
			events := changes(wctx)
			// A snapshot taken before now may miss what the watch
			// saw first: move on from it.
			p.generation.Add(1)
			p.watching.Store(true)
			for range events {
				p.generation.Add(1)
			}
			p.watching.Store(false)
			p.generation.Add(1)
			cancel()
			if time.Since(began) > time.Minute {
				backoff = newBackoff()
				continue
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff.Step()):
			}
		}
	}()
}

// current is the snapshot of now: kept while the watch sees no change.
func (p *Policy) current(ctx context.Context) (*snapshot, error) {
	s, err := p.bound()
	if err != nil {
		return nil, err
	}
	if !p.watching.Load() {
		return newSnapshot(ctx, s, 0)
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
	crbs := obj.(*rbac.ClusterRoleBindingList).Items
	for i := range crbs {
		b := &rbacv1.ClusterRoleBinding{}
		if err := rbacv1helpers.Convert_rbac_ClusterRoleBinding_To_v1_ClusterRoleBinding(&crbs[i], b, nil); err != nil {
			return nil, err
		}
		stored[b.Name] = true
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
	roles := obj.(*rbac.RoleList).Items
	for i := range roles {
		r := &rbacv1.Role{}
		if err := rbacv1helpers.Convert_rbac_Role_To_v1_Role(&roles[i], r, nil); err != nil {
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
	rbs := obj.(*rbac.RoleBindingList).Items
	for i := range rbs {
		b := &rbacv1.RoleBinding{}
		if err := rbacv1helpers.Convert_rbac_RoleBinding_To_v1_RoleBinding(&rbs[i], b, nil); err != nil {
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
