package synctarget

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/asstored"
)

// reconcile brings one SyncTarget along, in order: deletion (finalize),
// the finalizer, the install in the physical cluster, readiness from the
// heartbeat, and status. It returns how soon to look again (0: when an
// event says so).
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	st := cached.DeepCopy() // ours to change; cached is what is stored
	if st.DeletionTimestamp != nil {
		return c.finalize(ctx, cached, st)
	}
	if !hasFinalizer(st) {
		st.Finalizers = append(st.Finalizers, v1alpha1.SyncTargetFinalizer)
		_, err := c.client.Update(ctx, st, metav1.UpdateOptions{})
		return 0, err // the update brings it back
	}

	installed, installAgain, installErr := c.install(ctx, st)
	meta.SetStatusCondition(&st.Status.Conditions, installed)
	conds, readyAgain := readiness(st, c.opts.Now())
	for _, cond := range conds {
		meta.SetStatusCondition(&st.Status.Conditions, cond)
	}
	if c.deps.Authorized != nil {
		if ok, why := c.deps.Authorized(ctx, st.Name); ok {
			meta.SetStatusCondition(&st.Status.Conditions, condition(st, v1alpha1.SyncTargetAuthorized, metav1.ConditionTrue, ReasonAuthorized,
				"the syncer may sync the heaven"))
		} else {
			meta.SetStatusCondition(&st.Status.Conditions, condition(st, v1alpha1.SyncTargetAuthorized, metav1.ConditionFalse, ReasonUnauthorized,
				why+": the syncer is refused until the right is granted again"))
		}
	}
	if err := c.updateStatus(ctx, cached, st); err != nil {
		return 0, err
	}
	if installErr != nil {
		return 0, installErr
	}
	return soonest(installAgain, readyAgain), nil
}

// condition is a condition of st's generation.
func condition(st *v1alpha1.SyncTarget, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, ObservedGeneration: st.Generation}
}

// updateStatus writes st's status if it changed from cached's. st carries
// the resourceVersion the status was computed from: a newer write (the
// syncer's heartbeat) makes this one conflict and the key is retried.
func (c *Controller) updateStatus(ctx context.Context, cached, st *v1alpha1.SyncTarget) error {
	if asstored.Equal(&cached.Status, &st.Status) {
		return nil
	}
	_, err := c.client.UpdateStatus(ctx, st, metav1.UpdateOptions{})
	return err
}

func hasFinalizer(st *v1alpha1.SyncTarget) bool {
	for _, f := range st.Finalizers {
		if f == v1alpha1.SyncTargetFinalizer {
			return true
		}
	}
	return false
}

// soonest is the smallest positive duration, 0 if none is.
func soonest(ds ...time.Duration) time.Duration {
	var min time.Duration
	for _, d := range ds {
		if d > 0 && (min == 0 || d < min) {
			min = d
		}
	}
	return min
}
