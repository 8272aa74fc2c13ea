package synctarget

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/unstructuredconv"
)

// reconcile brings one SyncTarget along, in order: deletion (finalize),
// the finalizer, the install in the physical cluster, readiness from the
// heartbeat, and status. It returns how soon to look again (0: when an
// event says so).
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	obj, ok, err := c.targets.GetStore().GetByKey(name)
	if err != nil || !ok {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured).DeepCopy()
	var st v1alpha1.SyncTarget // freshly decoded: ours to change
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
		return 0, err
	}
	if st.DeletionTimestamp != nil {
		return c.finalize(ctx, u, &st)
	}
	if !hasFinalizer(u) {
		u.SetFinalizers(append(u.GetFinalizers(), v1alpha1.SyncTargetFinalizer))
		_, err := c.client.Update(ctx, u, metav1.UpdateOptions{})
		return 0, err // the update brings it back
	}

	installed, installAgain, installErr := c.install(ctx, &st)
	meta.SetStatusCondition(&st.Status.Conditions, installed)
	conds, readyAgain := readiness(&st, c.opts.Now())
	for _, cond := range conds {
		meta.SetStatusCondition(&st.Status.Conditions, cond)
	}
	if c.deps.Authorized != nil {
		if ok, why := c.deps.Authorized(ctx, st.Name); ok {
			meta.SetStatusCondition(&st.Status.Conditions, condition(&st, v1alpha1.SyncTargetAuthorized, metav1.ConditionTrue, ReasonAuthorized,
				"the syncer may sync the heaven"))
		} else {
			meta.SetStatusCondition(&st.Status.Conditions, condition(&st, v1alpha1.SyncTargetAuthorized, metav1.ConditionFalse, ReasonUnauthorized,
				why+": the syncer is refused until the right is granted again"))
		}
	}
	if err := c.updateStatus(ctx, u, &st.Status); err != nil {
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

// updateStatus writes status if it changed. u carries the resourceVersion
// the status was computed from: a newer write (the syncer's heartbeat)
// makes this one conflict and the key is retried.
func (c *Controller) updateStatus(ctx context.Context, u *unstructured.Unstructured, status *v1alpha1.SyncTargetStatus) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	old, _, _ := unstructured.NestedMap(u.Object, "status")
	if unstructuredconv.EqualJSON(old, raw) {
		return nil
	}
	u.Object["status"] = raw
	_, err = c.client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err
}

func hasFinalizer(u *unstructured.Unstructured) bool {
	for _, f := range u.GetFinalizers() {
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
