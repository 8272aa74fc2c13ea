package synctarget

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// Reasons of the Ready condition.
const (
	ReasonSyncerReady        = "SyncerReady"
	ReasonHeartbeatStale     = "HeartbeatStale"
	ReasonClusterUnreachable = "ClusterUnreachable"
)

// Reasons of the Authorized condition.
const (
	ReasonAuthorized   = "RequesterAuthorized"
	ReasonUnauthorized = "RequesterUnauthorized"
)

// staleSlack is added to the time a heartbeat goes stale before looking
// again, so that the look finds it stale.
const staleSlack = 100 * time.Millisecond

// readiness is the Ready condition of a SyncTarget at now (and
// SyncerHeartbeat False when heartbeats stopped), and how soon the
// heartbeat goes stale if nothing comes (0 when it is stale already).
//
// A heartbeat is fresh for HeartbeatStaleAfter heartbeat intervals
// (spec.heartbeatInterval, else the syncer's default). Ready is True while
// it is fresh and the syncer does not report the physical cluster
// unreachable.
func readiness(st *v1alpha1.SyncTarget, now time.Time) ([]metav1.Condition, time.Duration) {
	interval := st.Spec.HeartbeatIntervalOr(v1alpha1.DefaultHeartbeatInterval)
	staleAfter := v1alpha1.HeartbeatStaleAfter * interval
	last := st.Status.LastSyncerHeartbeatTime
	if last == nil {
		msg := "no heartbeat from the syncer yet"
		return []metav1.Condition{
			condition(st, v1alpha1.SyncTargetReady, metav1.ConditionFalse, ReasonHeartbeatStale, msg),
			condition(st, v1alpha1.SyncTargetSyncerHeartbeat, metav1.ConditionFalse, ReasonHeartbeatStale, msg),
		}, 0
	}
	staleAt := last.Add(staleAfter)
	if !now.Before(staleAt) {
		msg := fmt.Sprintf("no heartbeat from the syncer since %s (more than %d × %v)",
			last.UTC().Format(time.RFC3339), v1alpha1.HeartbeatStaleAfter, interval)
		return []metav1.Condition{
			condition(st, v1alpha1.SyncTargetReady, metav1.ConditionFalse, ReasonHeartbeatStale, msg),
			condition(st, v1alpha1.SyncTargetSyncerHeartbeat, metav1.ConditionFalse, ReasonHeartbeatStale, msg),
		}, 0
	}
	ready := condition(st, v1alpha1.SyncTargetReady, metav1.ConditionTrue, ReasonSyncerReady,
		"the syncer heartbeats and reaches the physical cluster")
	if r := meta.FindStatusCondition(st.Status.Conditions, v1alpha1.SyncTargetClusterReachable); r != nil && r.Status == metav1.ConditionFalse {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, ReasonClusterUnreachable, r.Message
	}
	return []metav1.Condition{ready}, staleAt.Sub(now) + staleSlack
}
