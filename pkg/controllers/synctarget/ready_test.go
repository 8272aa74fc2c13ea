package synctarget

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func TestReadiness(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(ago time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(-ago)} }
	unreachable := []metav1.Condition{{Type: v1alpha1.SyncTargetClusterReachable, Status: metav1.ConditionFalse, Reason: "ClusterUnreachable", Message: "dial tcp: refused"}}
	for _, tc := range []struct {
		name       string
		interval   *metav1.Duration
		heartbeat  *metav1.Time
		conditions []metav1.Condition
		ready      metav1.ConditionStatus
		reason     string
		stale      bool          // SyncerHeartbeat set False
		again      time.Duration // expected recheck (0: none)
	}{
		{name: "no heartbeat yet", ready: metav1.ConditionFalse, reason: ReasonHeartbeatStale, stale: true},
		{name: "fresh heartbeat, default interval", heartbeat: at(10 * time.Second), ready: metav1.ConditionTrue, reason: ReasonSyncerReady,
			again: 50*time.Second + staleSlack},
		{name: "just before 3 intervals", heartbeat: at(59 * time.Second), ready: metav1.ConditionTrue, reason: ReasonSyncerReady,
			again: time.Second + staleSlack},
		{name: "3 intervals old", heartbeat: at(60 * time.Second), ready: metav1.ConditionFalse, reason: ReasonHeartbeatStale, stale: true},
		{name: "short interval from spec, stale", interval: &metav1.Duration{Duration: time.Second}, heartbeat: at(4 * time.Second),
			ready: metav1.ConditionFalse, reason: ReasonHeartbeatStale, stale: true},
		{name: "short interval from spec, fresh", interval: &metav1.Duration{Duration: time.Second}, heartbeat: at(time.Second),
			ready: metav1.ConditionTrue, reason: ReasonSyncerReady, again: 2*time.Second + staleSlack},
		{name: "fresh but cluster unreachable", heartbeat: at(time.Second), conditions: unreachable,
			ready: metav1.ConditionFalse, reason: ReasonClusterUnreachable, again: 59*time.Second + staleSlack},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &v1alpha1.SyncTarget{
				ObjectMeta: metav1.ObjectMeta{Generation: 3},
				Spec:       v1alpha1.SyncTargetSpec{Heaven: "team-a", HeartbeatInterval: tc.interval},
				Status:     v1alpha1.SyncTargetStatus{LastSyncerHeartbeatTime: tc.heartbeat, Conditions: tc.conditions},
			}
			conds, again := readiness(st, now)
			byType := map[string]metav1.Condition{}
			for _, c := range conds {
				byType[c.Type] = c
				assert.Equal(t, int64(3), c.ObservedGeneration)
			}
			ready := byType[v1alpha1.SyncTargetReady]
			assert.Equal(t, tc.ready, ready.Status)
			assert.Equal(t, tc.reason, ready.Reason)
			hb, hasHB := byType[v1alpha1.SyncTargetSyncerHeartbeat]
			assert.Equal(t, tc.stale, hasHB)
			if tc.stale {
				assert.Equal(t, metav1.ConditionFalse, hb.Status)
			}
			assert.Equal(t, tc.again, again)
		})
	}
}

func TestReadinessMessageIsStableBetweenLooks(t *testing.T) {
	now := time.Now()
	st := &v1alpha1.SyncTarget{Status: v1alpha1.SyncTargetStatus{LastSyncerHeartbeatTime: &metav1.Time{Time: now.Add(-time.Hour)}}}
	a, _ := readiness(st, now)
	b, _ := readiness(st, now.Add(time.Minute))
	assert.Equal(t, a, b, "a stale target's status is written once, not at every look")
}
