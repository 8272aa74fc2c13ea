package syncer

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// typesKey is the only key of the type queue: the requested resources are
// reconciled together, on a change of the SyncTarget, every
// --type-resync-interval, and soon again while some are pending.
const typesKey = "types"

// pendingTypeRetry is how soon pending types (a CRD being established) are
// looked at again.
const pendingTypeRetry = 500 * time.Millisecond

// typeInfo is how a resource is synced: the same group-version-resource on
// both sides (the cluster's preferred version), and whether the heaven
// serves a status subresource for it.
type typeInfo struct {
	gvr       schema.GroupVersionResource
	kind      string
	hasStatus bool
	source    v1alpha1.TypeSource
}

// sameServing reports whether informers for a would serve b as well.
func (a typeInfo) sameServing(b typeInfo) bool {
	return a.gvr == b.gvr && a.kind == b.kind && a.hasStatus == b.hasStatus
}

func (s *Syncer) runTypeWorker(ctx context.Context) {
	for s.processNextTypes(ctx) {
	}
}

func (s *Syncer) processNextTypes(ctx context.Context) bool {
	key, quit := s.typeQueue.Get()
	if quit {
		return false
	}
	defer s.typeQueue.Done(key)
	pending, err := s.reconcileTypes(ctx)
	if err != nil {
		klog.FromContext(ctx).Info("Resolving resources failed, will retry", "err", err)
		s.typeQueue.AddRateLimited(key)
		return true
	}
	s.typeQueue.Forget(key)
	if pending {
		s.typeQueue.AddAfter(key, pendingTypeRetry)
	}
	return true
}

// reconcileTypes resolves every requested resource on both sides, teaches
// the heaven the types it lacks, starts the informers of the resources
// that can be synced (and stops those no longer requested), and reports
// every resource's state in the SyncTarget's status. A resource that
// cannot be synced never holds up the others.
func (s *Syncer) reconcileTypes(ctx context.Context) (pending bool, err error) {
	if !s.target.HasSynced() {
		return true, nil // spec.resources and spec.heaven are not known yet
	}
	if target := s.cachedTarget(); target != nil && target.Spec.Heaven != "" && target.Spec.Heaven != s.id.heaven {
		return false, fmt.Errorf("SyncTarget %s is for heaven %s, not %s: nothing is synced", s.id.target, target.Spec.Heaven, s.id.heaven)
	}
	wanted, invalid := s.wantedResources()
	down, err := newDiscoverySnapshot(ctx, s.down.discovery)
	s.setDownstreamErr(err)
	if err != nil {
		s.writeStatusOrLog(ctx, false)
		return false, fmt.Errorf("discovering the physical cluster: %w", err)
	}
	up, err := newDiscoverySnapshot(ctx, s.up.discovery)
	if err != nil {
		return false, fmt.Errorf("discovering the heaven: %w", err)
	}
	states := map[string]v1alpha1.ResourceSyncStatus{}
	infos := map[schema.GroupResource]typeInfo{}
	for _, gr := range wanted {
		info, st := s.resolveType(ctx, gr, down, up)
		states[st.Resource] = st
		if info != nil {
			infos[gr] = *info
		}
		pending = pending || st.State == v1alpha1.ResourcePending
		if st.State != v1alpha1.ResourceSynced {
			klog.FromContext(ctx).V(2).Info("Resource not synced", "resource", st.Resource, "state", st.State, "reason", st.Reason, "message", st.Message)
		}
	}
	for r, msg := range invalid {
		states[r] = v1alpha1.ResourceSyncStatus{Resource: r, State: v1alpha1.ResourceNotSynced, Reason: "InvalidResource", Message: msg}
	}
	s.applyTypes(ctx, wanted, infos)
	s.mu.Lock()
	s.states = states
	s.mu.Unlock()
	s.typesReconciled.Store(true)
	s.writeStatusOrLog(ctx, false)
	return pending, nil
}

// wantedResources is the union of --resources and the SyncTarget's
// spec.resources, and the invalid entries of the latter with why.
func (s *Syncer) wantedResources() ([]schema.GroupResource, map[string]string) {
	seen := map[schema.GroupResource]bool{}
	var wanted []schema.GroupResource
	add := func(gr schema.GroupResource) {
		if !seen[gr] {
			seen[gr] = true
			wanted = append(wanted, gr)
		}
	}
	for _, gr := range s.cfg.Resources {
		add(gr)
	}
	invalid := map[string]string{}
	if target := s.cachedTarget(); target != nil {
		for _, r := range target.Spec.Resources {
			if err := ValidateResource(r); err != nil {
				invalid[r] = err.Error()
				continue
			}
			add(schema.ParseGroupResource(r))
		}
	}
	sort.Slice(wanted, func(i, j int) bool { return wanted[i].String() < wanted[j].String() })
	return wanted, invalid
}

// applyTypes starts the informers of newly syncable resources, restarts
// those served differently now, and stops those no longer requested. A
// requested resource that is temporarily not resolvable keeps its
// informers: its objects go on being retried.
func (s *Syncer) applyTypes(ctx context.Context, wanted []schema.GroupResource, infos map[schema.GroupResource]typeInfo) {
	want := map[schema.GroupResource]bool{}
	for _, gr := range wanted {
		want[gr] = true
	}
	var stop []*syncedType
	s.mu.Lock()
	for gr, t := range s.types {
		info, resolved := infos[gr]
		if !want[gr] || (resolved && !info.sameServing(t.typeInfo)) {
			stop = append(stop, t)
			delete(s.types, gr)
		}
	}
	for gr, info := range infos {
		if s.types[gr] == nil {
			s.types[gr] = s.startType(ctx, info)
		}
	}
	s.mu.Unlock()
	for _, t := range stop {
		klog.FromContext(ctx).V(2).Info("Stopped syncing resource", "resource", t.gvr.GroupResource())
		t.stop()
	}
}

func (s *Syncer) setDownstreamErr(err error) {
	if err == nil {
		s.downstreamErr.Store(nil)
		return
	}
	s.downstreamErr.Store(&err)
}
