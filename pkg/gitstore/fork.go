package gitstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrBranchExists is returned by Fork when the new branch already exists.
var ErrBranchExists = errors.New("branch already exists")

// Fork creates branch name at the commit of branch from that was its head
// at revision rev (0: from's current head). The fork starts with from's
// history up to there, so its revisions continue from rev; later writes to
// either branch stay apart until merged. It returns the commit and its
// revision, and fails with ErrBranchExists if name exists. Compaction does
// not limit rev: every commit stays in git.
func (r *Repository) Fork(ctx context.Context, name, from string, rev int64) (plumbing.Hash, int64, error) {
	if err := ValidateBranchName(name); err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if err := ValidateBranchName(from); err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if h, err := r.git.Ref(plumbing.NewBranchReferenceName(name)); err != nil {
		return plumbing.ZeroHash, 0, err
	} else if !h.IsZero() {
		return plumbing.ZeroHash, 0, fmt.Errorf("%w: %q", ErrBranchExists, name)
	}
	// Open the source so that its head includes every acknowledged write.
	src, err := r.Branch(ctx, from)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	head, current := src.Head(), src.Revision()
	if head.IsZero() {
		return plumbing.ZeroHash, 0, fmt.Errorf("branch %q has no commits to fork from", from)
	}
	if rev <= 0 || rev > current {
		if rev > current {
			return plumbing.ZeroHash, 0, fmt.Errorf("%w: branch %q is at revision %d, not yet %d", ErrFutureRev, from, current, rev)
		}
		rev = current
	}
	at, atRev, err := src.commitAt(rev)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if err := r.git.CompareAndSwapRef(plumbing.NewBranchReferenceName(name), at, plumbing.ZeroHash); err != nil {
		return plumbing.ZeroHash, 0, err
	}
	return at, atRev, nil
}

// commitAt finds on the branch's first-parent chain the newest commit whose
// revision is at most rev, with the revision the branch gave it. Commits
// that carry no revision of their own (a merge that only joins histories,
// inside a group commit) are passed over for their first parent, which
// holds the same values.
func (b *Branch) commitAt(rev int64) (plumbing.Hash, int64, error) {
	for h := b.Head(); !h.IsZero(); {
		c, err := object.GetCommit(b.git.Storer(), h)
		if err != nil {
			return plumbing.ZeroHash, 0, fmt.Errorf("read commit %s: %w", h, err)
		}
		if r, ok := b.revisionOf(c); ok && r <= rev {
			return h, r, nil
		}
		if h, err = b.historyParent(c); err != nil {
			return plumbing.ZeroHash, 0, err
		}
	}
	return plumbing.ZeroHash, 0, fmt.Errorf("no commit at or before revision %d", rev)
}

// revisionOf is the last revision of commit c of the branch's first-parent
// chain: recorded when the commit was applied or written, else (a commit
// inside a group commit) named by its message.
func (b *Branch) revisionOf(c *object.Commit) (int64, bool) {
	b.mu.RLock()
	r, ok := b.chain[c.Hash]
	b.mu.RUnlock()
	if ok {
		return r, true
	}
	if _, last, ok := parseCommitOps(c.Message); ok {
		return last, true
	}
	return 0, false
}

// DeleteBranch closes branch name and deletes its ref. Its commits stay in
// the repository until git's garbage collection.
func (r *Repository) DeleteBranch(name string) error {
	if err := ValidateBranchName(name); err != nil {
		return err
	}
	ref := plumbing.NewBranchReferenceName(name)
	if err := r.CloseBranch(name); err != nil {
		return err
	}
	h, err := r.git.Ref(ref)
	if err != nil || h.IsZero() {
		return err
	}
	return r.git.DeleteRef(ref, h)
}

// Head returns the head commit of branch name without opening it, and its
// revision if it is open (-1 if not: knowing it means replaying history).
func (r *Repository) Head(name string) (plumbing.Hash, int64, error) {
	r.mu.Lock()
	b, open := r.branches[name]
	r.mu.Unlock()
	if open {
		return b.Head(), b.Revision(), nil
	}
	if err := ValidateBranchName(name); err != nil {
		return plumbing.ZeroHash, 0, err
	}
	h, err := r.git.Ref(plumbing.NewBranchReferenceName(name))
	return h, -1, err
}

// CommitAt returns the commit of the branch's history that holds revision
// rev (0: the head) and the revision the branch gave it: the newest one at
// or before rev. Compaction does not limit rev: every commit stays in git.
func (b *Branch) CommitAt(rev int64) (plumbing.Hash, int64, error) {
	if current := b.Revision(); rev <= 0 || rev == current {
		return b.commitAt(current)
	} else if rev > current {
		return plumbing.ZeroHash, 0, fmt.Errorf("%w: branch %q is at revision %d, not yet %d", ErrFutureRev, b.name, current, rev)
	}
	return b.commitAt(rev)
}

// HeadRevision returns the head commit of branch name and its revision
// without opening the branch: the open branch's, else the one the head
// commit's message records (-1 when it records none: a commit made
// outside the store, whose revision only replaying history tells).
func (r *Repository) HeadRevision(name string) (plumbing.Hash, int64, error) {
	h, rev, err := r.Head(name)
	if err != nil || rev >= 0 || h.IsZero() {
		return h, rev, err
	}
	c, err := object.GetCommit(r.git.Storer(), h)
	if err != nil {
		return h, -1, err
	}
	if _, last, ok := parseCommitOps(c.Message); ok {
		return h, last, nil
	}
	if last, ok := parseOutsideRevision(c.Message); ok {
		return h, last, nil
	}
	return h, -1, nil
}
