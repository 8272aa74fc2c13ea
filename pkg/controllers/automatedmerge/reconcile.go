package automatedmerge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/asstored"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/conflictreport"
	"github.com/heaven-dev/heaven/pkg/deputy"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// reconcile merges every source of AutomatedMerge name into its target
// and reports in status. It returns when to merge again at the latest.
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
	am := cached.DeepCopy()
	status := am.Status.DeepCopy()
	status.ObservedGeneration = am.Generation
	p, err := compile(am.Spec, c.branches.Ephemeral)
	switch {
	case err != nil:
		setReady(status, am.Generation, metav1.ConditionFalse, v1alpha1.ReasonInvalid, err.Error())
		return 0, c.updateStatus(ctx, am, status)
	case am.Spec.Suspend:
		setReady(status, am.Generation, metav1.ConditionFalse, v1alpha1.ReasonSuspended, "spec.suspend is set")
		return 0, c.updateStatus(ctx, am, status)
	}
	author := ""
	if requester, ok := deputy.Requester(am); ok && c.branches.Authorize != nil {
		author = requester.GetName()
		err := deputy.Check(ctx, c.branches.Authorize, requester, deputy.MergeRights(am))
		var missing *deputy.MissingRightError
		switch {
		case errors.As(err, &missing):
			msg := err.Error() + ": no merge until the right is granted again"
			setCondition(status, am.Generation, v1alpha1.ConditionAuthorized, metav1.ConditionFalse, v1alpha1.ReasonUnauthorized, msg)
			setReady(status, am.Generation, metav1.ConditionFalse, v1alpha1.ReasonUnauthorized, msg)
			return p.interval, c.updateStatus(ctx, am, status)
		case err != nil:
			return 0, err
		}
		setCondition(status, am.Generation, v1alpha1.ConditionAuthorized, metav1.ConditionTrue, v1alpha1.ReasonAuthorized,
			fmt.Sprintf("user %q may read the sources and write the target", author))
	}
	target, err := c.branches.Open(ctx, p.target)
	if err != nil {
		return 0, fmt.Errorf("opening heaven %s: %w", p.target, err)
	}
	var errs []error
	for _, src := range p.sources {
		if err := c.mergeSource(ctx, am, p, target, src, author, status); err != nil {
			errs = append(errs, fmt.Errorf("merging %s into %s: %w", src, p.target, err))
		}
	}
	keepSources(status, p.sources)
	summarize(status, am.Generation)
	if err := c.updateStatus(ctx, am, status); err != nil {
		errs = append(errs, err)
	}
	return p.interval, errors.Join(errs...)
}

// mergeSource merges the head of heaven src into target, unless that very
// attempt was made already, and records what happened in status.
func (c *Controller) mergeSource(ctx context.Context, am *v1alpha1.AutomatedMerge, p *plan, target gitstore.MergeTarget, src, author string, status *v1alpha1.AutomatedMergeStatus) error {
	st := sourceStatus(status, src)
	key := attemptKey{merge: am.Name, source: src}
	c.reportMerged(key, st)
	head, err := c.branches.Head(ctx, src)
	if err != nil {
		st.Message = err.Error()
		return err
	}
	if head.IsZero() {
		st.Message = fmt.Sprintf("heaven %s has no commits", src)
		return nil
	}
	if c.remembered(key, attempt{generation: am.Generation, source: head, target: target.Head()}) {
		return nil
	}
	out, err := gitstore.MergeCommit(ctx, c.branches.Commits, target, head, gitstore.MergeCommitOptions{
		Merger:  p.merger,
		Include: p.include,
		Message: fmt.Sprintf("merge heaven %s (%s) into %s (AutomatedMerge %s)", src, short(head), p.target, am.Name),
		Author:  author,
	})
	if errors.Is(err, gitstore.ErrNoTargetHead) {
		st.Message = fmt.Sprintf("heaven %s has no commits", p.target)
		return nil
	}
	if err != nil {
		st.Message = err.Error()
		return err
	}
	st.Message = ""
	written := !out.Written.Commit.IsZero()
	if written {
		c.remember(key, nil)
	} else {
		c.remember(key, &attempt{generation: am.Generation, source: head, target: out.TargetHead})
	}
	c.record(ctx, am, src, p.target, head, out, st, status)
	if written {
		c.rememberMerged(key, st)
	}
	return nil
}

// record puts one attempt's outcome into status and Events.
func (c *Controller) record(ctx context.Context, am *v1alpha1.AutomatedMerge, src, target string, head plumbing.Hash,
	out gitstore.MergeOutcome, st *v1alpha1.SourceMergeStatus, status *v1alpha1.AutomatedMergeStatus) {
	logger := klog.FromContext(ctx).WithValues("source", src, "target", target, "sourceCommit", head)
	switch {
	case out.Blocked:
		st.Blocked, st.BlockedCommit, st.Conflicts = true, head.String(), int32(len(out.Conflicts))
		setConflicts(status, src, out.Conflicts)
		c.conflictEvents(am, src, out.Conflicts)
		c.recorder.Eventf(am, corev1.EventTypeWarning, "MergeBlocked",
			"Not merging heaven %s (%s) into %s: %d conflicts, resolved Manual; %s is unchanged", src, short(head), target, len(out.Conflicts), target)
		logger.V(2).Info("Merge blocked by conflicts", "conflicts", len(out.Conflicts))
	case !out.Written.Commit.IsZero():
		now := metav1.Now()
		st.Blocked, st.BlockedCommit = false, ""
		st.SourceCommit, st.TargetCommit, st.Revision = head.String(), out.Written.Commit.String(), out.Written.Revision
		st.LastMergeTime, st.ObjectsChanged, st.Conflicts = &now, int32(out.Changes), int32(len(out.Conflicts))
		setConflicts(status, src, out.Conflicts)
		c.conflictEvents(am, src, out.Conflicts)
		c.recorder.Eventf(am, corev1.EventTypeNormal, "Merged",
			"Merged heaven %s (%s) into %s: %d objects changed, %d conflicts resolved; commit %s, revision %d",
			src, short(head), target, out.Changes, len(out.Conflicts), short(out.Written.Commit), out.Written.Revision)
		logger.V(2).Info("Merged", "changes", out.Changes, "conflicts", len(out.Conflicts), "commit", out.Written.Commit, "revision", out.Written.Revision)
	case len(out.Conflicts) > 0:
		// Every conflict resolved to the target's value: nothing to write,
		// but the conflicts are reported all the same.
		st.Blocked, st.BlockedCommit, st.Conflicts = false, "", int32(len(out.Conflicts))
		setConflicts(status, src, out.Conflicts)
		c.conflictEvents(am, src, out.Conflicts)
		logger.V(2).Info("Conflicts resolved to the target's values; nothing to write", "conflicts", len(out.Conflicts))
	case st.Blocked:
		// Up to date, or nothing to change: what blocked the merge was
		// resolved in the target or the source.
		st.Blocked, st.BlockedCommit, st.Conflicts = false, "", 0
		setConflicts(status, src, nil)
	default:
		logger.V(4).Info("Nothing to merge", "upToDate", out.UpToDate)
	}
}

// maxConflictEvents bounds the Events of one merge's conflicts; the merge's
// own Event counts them all.
const maxConflictEvents = 20

func (c *Controller) conflictEvents(am *v1alpha1.AutomatedMerge, src string, conflicts []mergeConflict) {
	for i, cf := range conflicts {
		if i == maxConflictEvents {
			c.recorder.Eventf(am, corev1.EventTypeWarning, "MergeConflict", "%d more conflicts merging heaven %s", len(conflicts)-i, src)
			return
		}
		mc := conflictreport.Of(src, cf)
		c.recorder.Eventf(am, corev1.EventTypeWarning, "MergeConflict", "Heaven %s: %s %s: base %s, target %s, source %s: %s",
			src, mc.Object, orWhole(mc.Path), shown(mc.Base), shown(mc.Target), shown(mc.Source), mc.Resolution)
	}
}

// updateStatus writes status if it changed, on the latest version of the
// object: a merge already written must be reported even if the object
// changed meanwhile.
func (c *Controller) updateStatus(ctx context.Context, am *v1alpha1.AutomatedMerge, status *v1alpha1.AutomatedMergeStatus) error {
	if asstored.Equal(&am.Status, status) {
		return nil
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		am.Status = *status
		_, err := c.client.UpdateStatus(ctx, am, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, gerr := c.client.Get(ctx, am.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		am = latest
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func short(h plumbing.Hash) string { return h.String()[:12] }
