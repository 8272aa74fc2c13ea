package gitstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/klog/v2"
)

// pickupState paces picking up commits from outside after a failure (a
// commit whose objects can't be read: a missing object, a broken pack):
// retries back off exponentially up to maxPickupBackoff, the failure is
// logged once per distinct error, and writes fail at once with it
// (ErrUnavailable) instead of retrying against a ref they can't catch up
// with. The content of a commit never fails a pick-up (problems.go).
type pickupState struct {
	failures int
	retryAt  time.Time
	err      error // the last failure, nil once a pick-up succeeded
}

const (
	minPickupBackoff = 250 * time.Millisecond
	maxPickupBackoff = 30 * time.Second
)

// waiting says whether a failed pick-up is still backing off.
func (p *pickupState) waiting(now time.Time) bool {
	return p.err != nil && now.Before(p.retryAt)
}

// record notes the outcome of a pick-up.
func (p *pickupState) record(log klog.Logger, err error, now time.Time) {
	if err == nil {
		if p.err != nil {
			log.Info("Picking up commits from outside works again", "failures", p.failures)
		}
		*p = pickupState{}
		return
	}
	if p.err == nil || p.err.Error() != err.Error() {
		log.Error(err, "Picking up commits from outside failed; retrying with backoff")
	}
	p.failures++
	p.err = err
	p.retryAt = now.Add(min(minPickupBackoff<<min(p.failures-1, 16), maxPickupBackoff))
}

// pickUp ingests commits made by others, unless a failed attempt is still
// backing off (the repository's poller kicks again while the ref differs).
func (b *Branch) pickUp() {
	now := time.Now()
	if b.pickup.waiting(now) {
		return
	}
	before := b.head
	b.pickup.record(b.log, b.ingest(), now)
	b.notifyHead(before)
	b.notifyProblems()
}

// ErrUnavailable is returned for writes to a branch that moved to commits
// the store cannot read; writes resume once a pick-up succeeds.
var ErrUnavailable = errors.New("gitstore: branch unavailable")

// ingest picks up commits that others made to the branch (a git push, a
// merge, a reset). Runs on the writer goroutine.
//
// When the new head's first-parent chain passes through our head, each new
// commit is applied in order (applyCommit). Otherwise the branch was moved
// sideways or back; revisions must not go backwards, so we answer with a
// merge commit whose first parent is our head and whose tree is the new
// head's: the content the pusher wanted, at the next revision, with both
// histories kept.
func (b *Branch) ingest() (err error) {
	tip, err := b.git.Ref(b.ref)
	if err != nil || tip == b.head {
		return err
	}
	before := b.head
	defer func() {
		// Commits applied before a failure stay applied; the writer's
		// tree must follow the head all the same.
		if err != nil && b.head != before {
			if rerr := b.resetMirror(); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	if tip.IsZero() {
		// The branch was deleted under us: recreate it from our head.
		return b.git.CompareAndSwapRef(b.ref, b.head, plumbing.ZeroHash)
	}
	var fresh []*object.Commit
	known := plumbing.ZeroHash
	for h := tip; !h.IsZero(); {
		if _, ok := b.chain[h]; ok {
			known = h
			break
		}
		c, err := object.GetCommit(b.git.Storer(), h)
		if err != nil {
			return fmt.Errorf("read commit %s: %w", h, err)
		}
		fresh = append(fresh, c)
		if h, err = b.historyParent(c); err != nil {
			return err
		}
	}
	headRev := b.chain[b.head]
	if b.head.IsZero() {
		headRev = 1
	}
	// Applying commits one by one gives the same revisions as a rebuild
	// only while every revision handed out is in git; after leased-key
	// revisions the answer is a merge that names its revision.
	if known == b.head && headRev == b.latest {
		for i := len(fresh) - 1; i >= 0; i-- {
			if err := b.applyCommit(fresh[i], true); err != nil {
				return err
			}
		}
		if err := b.resetMirror(); err != nil {
			return err
		}
		b.log.Info("Picked up commits from outside", "commits", len(fresh), "head", tip, "revision", b.latest)
		return nil
	}
	return b.reconcile(tip)
}

// reconcile answers a non-fast-forward move of the branch to tip with a
// merge commit whose tree is tip's: content from outside, read as such by
// applyCommit (a file that can't be served keeps its key's last good value).
func (b *Branch) reconcile(tip plumbing.Hash) error {
	tipCommit, err := object.GetCommit(b.git.Storer(), tip)
	if err != nil {
		return err
	}
	subject := fmt.Sprintf("Merge %s: the branch was moved from %s, keep its content", shortHash(tip), shortHash(b.head))
	wb := b.git.NewBatch()
	h, err := wb.AddCommit(b.newCommit(tipCommit.TreeHash, outsideMessage(subject, b.latest+1), "", b.head, tip))
	if err != nil {
		return err
	}
	if err := b.git.Commit(wb, b.ref, h, tip); err != nil {
		return err // moved again: the next poll tries again
	}
	c, err := object.GetCommit(b.git.Storer(), h)
	if err != nil {
		return err
	}
	if err := b.applyCommit(c, true); err != nil {
		return err
	}
	b.log.Info("Branch moved from outside without fast-forward; merged", "tip", tip, "merge", h, "revision", b.latest)
	return b.resetMirror()
}
