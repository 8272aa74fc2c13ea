package syncer

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// runHeartbeat heartbeats every heartbeatInterval until ctx ends.
func (s *Syncer) runHeartbeat(ctx context.Context) {
	for {
		s.heartbeat(ctx)
		t := time.NewTimer(s.heartbeatInterval())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// heartbeatInterval is the SyncTarget's spec.heartbeatInterval, else
// --heartbeat-interval: the cluster controller judges heartbeats by the
// former, so a syncer run by hand follows it too.
func (s *Syncer) heartbeatInterval() time.Duration {
	if target := s.cachedTarget(); target != nil {
		return target.Spec.HeartbeatIntervalOr(s.cfg.HeartbeatInterval)
	}
	return s.cfg.HeartbeatInterval
}

// cachedTarget is the SyncTarget from the cache, nil if not there (yet).
// It is the cache's: never changed.
func (s *Syncer) cachedTarget() *v1alpha1.SyncTarget {
	target, err := s.targetLister.Get(s.id.target)
	if err != nil {
		return nil
	}
	return target
}

// heartbeat writes the heartbeat, the resources' states and object counts
// into the SyncTarget's status.
func (s *Syncer) heartbeat(ctx context.Context) {
	if err := s.writeStatus(ctx, true); err != nil {
		klog.FromContext(ctx).Info("Writing heartbeat failed, will retry", "err", err)
		return
	}
	heartbeatMetric.WithLabelValues(s.id.heaven, s.id.target).SetToCurrentTime()
}

func (s *Syncer) writeStatusOrLog(ctx context.Context, heartbeat bool) {
	if err := s.writeStatus(ctx, heartbeat); err != nil {
		klog.FromContext(ctx).Info("Writing SyncTarget status failed", "err", err)
	}
}

// writeStatus writes what the syncer knows into the SyncTarget's status
// (with a new heartbeat time if heartbeat), if that changes it.
func (s *Syncer) writeStatus(ctx context.Context, heartbeat bool) error {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	resources := s.resourceStatuses()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		target, err := s.targets.Get(ctx, s.id.target, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading SyncTarget %s: %w", s.id.target, err)
		}
		stored := target.Status.DeepCopy()
		// target was just read, not cached: ours to change.
		s.fillStatus(&target.Status, resources, heartbeat, target.Generation)
		if equalJSON(stored, &target.Status) {
			return nil
		}
		_, err = s.targets.UpdateStatus(ctx, target, metav1.UpdateOptions{})
		return err
	})
}

// fillStatus sets the syncer's part of a SyncTarget status.
func (s *Syncer) fillStatus(status *v1alpha1.SyncTargetStatus, resources []v1alpha1.ResourceSyncStatus, heartbeat bool, generation int64) {
	now := metav1.Now()
	if heartbeat {
		status.LastSyncerHeartbeatTime = &now
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: v1alpha1.SyncTargetSyncerHeartbeat, Status: metav1.ConditionTrue, ObservedGeneration: generation,
			Reason: "Heartbeat", Message: fmt.Sprintf("syncer %s heartbeats", s.id.target),
		})
	}
	status.Resources = resources

	synced := metav1.Condition{Type: v1alpha1.SyncTargetResourcesSynced, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason: "AllSynced", Message: "every requested resource is synced"}
	if !s.typesReconciled.Load() {
		synced.Status, synced.Reason, synced.Message = metav1.ConditionUnknown, "Resolving", "the syncer is resolving the requested resources"
	} else if bad := notSynced(resources); len(bad) > 0 {
		synced.Status, synced.Reason, synced.Message = metav1.ConditionFalse, "ResourcesNotSynced", "not synced: "+strings.Join(bad, ", ")
	}
	meta.SetStatusCondition(&status.Conditions, synced)

	// Ready is the cluster controller's: it folds this in.
	reachable := metav1.Condition{Type: v1alpha1.SyncTargetClusterReachable, Status: metav1.ConditionTrue, ObservedGeneration: generation,
		Reason: "ClusterReachable", Message: "the syncer reaches the physical cluster"}
	if errp := s.downstreamErr.Load(); errp != nil {
		reachable.Status, reachable.Reason, reachable.Message = metav1.ConditionFalse, "ClusterUnreachable", (*errp).Error()
	}
	meta.SetStatusCondition(&status.Conditions, reachable)
}

func notSynced(resources []v1alpha1.ResourceSyncStatus) []string {
	var bad []string
	for _, r := range resources {
		if r.State != v1alpha1.ResourceSynced {
			bad = append(bad, r.Resource)
		}
	}
	return bad
}

// resourceStatuses is every requested resource's state with its object
// counts, sorted by resource; it also updates the metrics of the same.
func (s *Syncer) resourceStatuses() []v1alpha1.ResourceSyncStatus {
	s.mu.RLock()
	defer s.mu.RUnlock()
	failed := map[string]int64{}
	for key := range s.failures {
		failed[key.gr.String()]++
	}
	out := make([]v1alpha1.ResourceSyncStatus, 0, len(s.states))
	for _, st := range s.states {
		if t, ok := s.types[parseGroupResource(st.Resource)]; ok {
			st.ObjectsSynced = int64(len(t.down.GetStore().ListKeys()))
		}
		st.ObjectsFailed = failed[st.Resource]
		objectsSyncedMetric.WithLabelValues(s.id.heaven, s.id.target, st.Resource).Set(float64(st.ObjectsSynced))
		objectsFailedMetric.WithLabelValues(s.id.heaven, s.id.target, st.Resource).Set(float64(st.ObjectsFailed))
		for _, state := range []v1alpha1.ResourceSyncState{v1alpha1.ResourceSynced, v1alpha1.ResourcePending, v1alpha1.ResourceNotSynced} {
			v := 0.0
			if st.State == state {
				v = 1
			}
			resourceStateMetric.WithLabelValues(s.id.heaven, s.id.target, st.Resource, string(state)).Set(v)
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Resource < out[j].Resource })
	return out
}
