package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/asstored"
	"github.com/heaven-dev/heaven/pkg/deputy"
)

// exchangeTimeout bounds one exchange with a remote (a remote that does not
// answer must not hold a worker for ever).
const exchangeTimeout = 2 * time.Minute

// reconcile exchanges heaven name's branch with its remote and reports in
// status. It returns when to exchange again at the latest.
func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(name)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if cached.DeletionTimestamp != nil {
		return 0, nil
	}
	h := cached.DeepCopy()
	if h.Spec.Remote == nil {
		c.forget(name)
		return 0, c.updateStatus(ctx, h, nil, nil)
	}
	st := c.state(name, h.Generation)
	// What this controller last reported, which the informer's copy of
	// the Heaven may still lack.
	before, prevCond := st.reported, st.reportedCond
	if before == nil {
		before, prevCond = h.Status.Remote, meta.FindStatusCondition(h.Status.Conditions, v1alpha1.ConditionRemoteSynced)
	}
	status := &v1alpha1.RemoteStatus{}
	if before != nil {
		status = before.DeepCopy()
	}
	p, err := compile(name, h.Spec.Remote, c.git.ValidURL, c.git.Ephemeral)
	if err != nil {
		status.Message = err.Error()
		cond := condition(h.Generation, metav1.ConditionFalse, v1alpha1.ReasonRemoteInvalid, "spec.remote: "+err.Error())
		return 0, c.report(ctx, h, name, status, &cond)
	}
	status.URL, status.Branch = p.url, p.branch
	if requester, ok := deputy.Requester(h); ok && c.git.Authorize != nil {
		err := deputy.Check(ctx, c.git.Authorize, requester, deputy.RemoteRights(h))
		var missing *deputy.MissingRightError
		switch {
		case errors.As(err, &missing):
			status.Message = err.Error()
			cond := condition(h.Generation, metav1.ConditionFalse, v1alpha1.ReasonRemoteUnauthorized,
				err.Error()+": no fetch, merge or push until the right is granted again")
			return p.interval, c.report(ctx, h, name, status, &cond)
		case err != nil:
			return 0, err
		}
	}

	xctx, cancel := context.WithTimeout(ctx, exchangeTimeout)
	r, err := exchange(xctx, c.git, p, st.idle)
	cancel()
	if err != nil {
		st.failing, st.idle = true, [2]plumbing.Hash{}
		c.setState(name, st)
		cond := c.failed(h, p, status, err, before)
		if uerr := c.report(ctx, h, name, status, &cond); uerr != nil {
			klog.FromContext(ctx).V(2).Info("Reporting a failed exchange failed", "err", uerr)
		}
		return 0, err
	}
	st.failing, st.head = false, r.Local
	if r.Idle || nothingDone(r) {
		st.idle = [2]plumbing.Hash{r.Local, r.Remote}
	} else {
		st.idle = [2]plumbing.Hash{}
	}
	c.setState(name, st)
	cond := c.record(ctx, h, p, r, status)
	if r.Idle && prevCond != nil {
		cond = *prevCond // the same heads as the last exchange, which reported them
	}
	return p.interval, c.report(ctx, h, name, status, &cond)
}

// report writes status and cond and remembers them as reported.
func (c *Controller) report(ctx context.Context, h *v1alpha1.Heaven, name string, status *v1alpha1.RemoteStatus, cond *metav1.Condition) error {
	if err := c.updateStatus(ctx, h, status, cond); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.states[name]; st != nil {
		st.reported, st.reportedCond = status.DeepCopy(), cond.DeepCopy()
	}
	return nil
}

// nothingDone: an exchange that wrote and pushed nothing; the next with the
// same heads would do the same.
func nothingDone(r *round) bool {
	return !r.Cloned && r.Pushed.IsZero() && r.Joined.IsZero() && (r.Merge == nil || r.Merge.Written.Commit.IsZero())
}

// failed reports a failed exchange in status and returns its condition; the
// first failure in a row is also an Event.
func (c *Controller) failed(h *v1alpha1.Heaven, p *plan, status *v1alpha1.RemoteStatus, err error, before *v1alpha1.RemoteStatus) metav1.Condition {
	status.Failures = int32(c.loop.Queue().NumRequeues(p.heaven)) + 1
	status.Message = err.Error()
	reason := v1alpha1.ReasonRemoteUnreachable
	switch {
	case errors.Is(err, errPush):
		reason = v1alpha1.ReasonRemoteRejected
	case !errors.Is(err, errFetch):
		reason = v1alpha1.ReasonRemoteSyncFailed
	}
	if before == nil || before.Failures == 0 {
		c.recorder.Eventf(h, corev1.EventTypeWarning, reason, "Exchanging with %s (branch %s) failed; retrying with backoff: %v", p.url, p.branch, err)
	}
	return condition(h.Generation, metav1.ConditionFalse, reason,
		fmt.Sprintf("%d attempts in a row failed; changes wait on both sides and are exchanged when it works again: %v", status.Failures, err))
}

// record puts a successful exchange into status and Events and returns the
// condition it earns.
func (c *Controller) record(ctx context.Context, h *v1alpha1.Heaven, p *plan, r *round, status *v1alpha1.RemoteStatus) metav1.Condition {
	logger := klog.FromContext(ctx).WithValues("remote", p.url, "branch", p.branch)
	now := metav1.NewTime(r.FetchedAt)
	status.LastFetchTime, status.RemoteCommit = &now, hashString(r.Remote)
	status.Failures, status.Message = 0, ""
	if r.Cloned {
		logger.Info("Started the heaven from its remote branch", "commit", r.Remote)
		c.recorder.Eventf(h, corev1.EventTypeNormal, "Cloned", "Started from %s of %s at %s", p.branch, p.url, short(r.Remote))
	}
	if m := r.Merge; m != nil && (!m.Written.Commit.IsZero() || m.Blocked || len(m.Conflicts) > 0) {
		c.recordMerge(h, p, r, status)
	}
	if !r.Pushed.IsZero() {
		t := metav1.Now()
		status.PushedCommit, status.LastPushTime = r.Pushed.String(), &t
		logger.V(2).Info("Pushed", "commit", r.Pushed, "joined", !r.Joined.IsZero())
	}
	switch {
	case r.Merge != nil && r.Merge.Blocked:
		return condition(h.Generation, metav1.ConditionFalse, v1alpha1.ReasonRemoteBlocked,
			fmt.Sprintf("%d conflicts with the remote resolved Manual: nothing is merged or pushed until they are resolved or the policy changes", len(r.Merge.Conflicts)))
	case r.Local.IsZero() && r.Remote.IsZero():
		return condition(h.Generation, metav1.ConditionFalse, v1alpha1.ReasonRemoteWaiting, "neither the heaven nor the remote branch has commits yet")
	case !r.InSync && !p.push:
		return condition(h.Generation, metav1.ConditionTrue, v1alpha1.ReasonRemoteSynced, "the remote is merged; the heaven's own changes are not pushed (spec.remote.push is false)")
	}
	return condition(h.Generation, metav1.ConditionTrue, v1alpha1.ReasonRemoteSynced, "the heaven and the remote branch hold the same objects")
}

// recordMerge reports a merge of the remote (written, blocked, or with
// conflicts resolved to the heaven's values).
func (c *Controller) recordMerge(h *v1alpha1.Heaven, p *plan, r *round, status *v1alpha1.RemoteStatus) {
	m := r.Merge
	src := p.branch + " of " + p.url
	status.ConflictCount, status.Conflicts = int32(len(m.Conflicts)), nil
	for i, cf := range m.Conflicts {
		if i == v1alpha1.MaxReportedConflicts {
			break
		}
		status.Conflicts = append(status.Conflicts, reportConflict(p.branch, cf))
	}
	for i, cf := range m.Conflicts {
		if i == maxConflictEvents {
			c.recorder.Eventf(h, corev1.EventTypeWarning, "MergeConflict", "%d more conflicts merging %s", len(m.Conflicts)-i, src)
			break
		}
		mc := reportConflict(p.branch, cf)
		c.recorder.Eventf(h, corev1.EventTypeWarning, "MergeConflict", "%s: %s %s: base %s, heaven %s, remote %s: %s",
			src, mc.Object, orWhole(mc.Path), shown(mc.Base), shown(mc.Target), shown(mc.Source), mc.Resolution)
	}
	switch {
	case m.Blocked:
		c.recorder.Eventf(h, corev1.EventTypeWarning, "MergeBlocked", "Not merging %s (%s): %d conflicts resolved Manual", src, short(r.Remote), len(m.Conflicts))
	case !m.Written.Commit.IsZero():
		t := metav1.Now()
		status.MergedCommit, status.MergeCommit, status.LastMergeTime = r.Remote.String(), m.Written.Commit.String(), &t
		status.ObjectsChanged = int32(m.Changes)
		c.recorder.Eventf(h, corev1.EventTypeNormal, "Merged", "Merged %s (%s): %d objects changed, %d conflicts resolved; commit %s, revision %d",
			src, short(r.Remote), m.Changes, len(m.Conflicts), short(m.Written.Commit), m.Written.Revision)
	}
}

// maxConflictEvents bounds the Events of one merge's conflicts.
const maxConflictEvents = 20

// statusRefresh is how stale status.remote.lastFetchTime may get when
// nothing else changes: every fetch would otherwise be a commit of the root
// heaven.
const statusRefresh = time.Minute

// updateStatus writes status.remote (nil: removes it) and the RemoteSynced
// condition (nil: removes it) if they changed, on the latest version of
// the object; a change of lastFetchTime alone waits for statusRefresh.
func (c *Controller) updateStatus(ctx context.Context, h *v1alpha1.Heaven, status *v1alpha1.RemoteStatus, cond *metav1.Condition) error {
	for attempt := 0; ; attempt++ {
		if !applyStatus(h, status, cond) {
			return nil
		}
		_, err := c.client.UpdateStatus(ctx, h, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case apierrors.IsConflict(err) && attempt < 5:
			latest, gerr := c.client.Get(ctx, h.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			h = latest
			continue
		}
		return err
	}
}

// applyStatus sets status.remote and the condition in h and says whether
// that is worth writing.
func applyStatus(h *v1alpha1.Heaven, status *v1alpha1.RemoteStatus, cond *metav1.Condition) bool {
	hs := h.Status.DeepCopy()
	hs.Remote = status.DeepCopy()
	if cond == nil {
		meta.RemoveStatusCondition(&hs.Conditions, v1alpha1.ConditionRemoteSynced)
	} else {
		meta.SetStatusCondition(&hs.Conditions, *cond)
	}
	if !worthWriting(&h.Status, hs) {
		return false
	}
	h.Status = *hs
	return true
}

// worthWriting says whether after differs from before by more than a
// fresher lastFetchTime within statusRefresh.
func worthWriting(before, after *v1alpha1.HeavenStatus) bool {
	b, a := before.DeepCopy(), after.DeepCopy()
	if b.Remote != nil && a.Remote != nil && b.Remote.LastFetchTime != nil && a.Remote.LastFetchTime != nil &&
		a.Remote.LastFetchTime.Sub(b.Remote.LastFetchTime.Time) < statusRefresh {
		a.Remote.LastFetchTime = b.Remote.LastFetchTime
	}
	return !asstored.Equal(b, a)
}

func condition(generation int64, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionRemoteSynced, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation}
}

func hashString(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}
