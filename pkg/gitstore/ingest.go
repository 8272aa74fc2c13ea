package gitstore

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ingest picks up commits that others made to the branch (a git push, a
// merge, a reset). Runs on the writer goroutine.
//
// When the new head's first-parent chain passes through our head, each new
// commit is applied in order (applyCommit). Otherwise the branch was moved
// sideways or back; revisions must not go backwards, so we answer with a
// merge commit whose first parent is our head and whose tree is the new
// head's: the content the pusher wanted, at the next revision, with both
// histories kept.
func (b *Branch) ingest() error {
	tip, err := b.git.Ref(b.ref)
	if err != nil || tip == b.head {
		return err
	}
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
		h = firstParent(c)
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

// reconcile answers a non-fast-forward move of the branch to tip.
func (b *Branch) reconcile(tip plumbing.Hash) error {
	tipCommit, err := object.GetCommit(b.git.Storer(), tip)
	if err != nil {
		return err
	}
	diff, err := b.diffTrees(b.tree, tipCommit.TreeHash)
	if err != nil {
		return err
	}
	rev := b.latest + 1
	var ops []commitOp
	for _, stem := range sortedStems(diff) {
		key, err := PathKey(stem)
		if err != nil {
			continue
		}
		cur := b.x.current(key)
		switch {
		case diff[stem].blob.IsZero() && (cur == nil || cur.ext == ""):
			continue
		case diff[stem].blob.IsZero():
			ops = append(ops, commitOp{rev: rev, kind: opDelete, stem: stem})
		case cur == nil || cur.ext == "":
			ops = append(ops, commitOp{rev: rev, kind: opCreate, stem: stem})
		default:
			ops = append(ops, commitOp{rev: rev, kind: opUpdate, stem: stem})
		}
	}
	msg := fmt.Sprintf("Merge %s: the branch was moved from %s, keep its content\n\n", tip.String()[:12], b.head.String()[:12])
	if len(ops) > 0 {
		for _, op := range ops {
			msg += fmt.Sprintf("%d %s %s\n", op.rev, op.kind, op.stem)
		}
		msg += "\n" + fmt.Sprintf("%s%d\n", revisionTrailer, rev)
	}
	wb := b.git.NewBatch()
	h, err := wb.AddCommit(b.newCommit(tipCommit.TreeHash, msg, b.head, tip))
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
