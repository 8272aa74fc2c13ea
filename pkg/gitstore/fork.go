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
	at, atRev, err := r.commitAtRevision(head, rev)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	if err := r.git.CompareAndSwapRef(plumbing.NewBranchReferenceName(name), at, plumbing.ZeroHash); err != nil {
		return plumbing.ZeroHash, 0, err
	}
	return at, atRev, nil
}

// commitAtRevision finds on the first-parent chain of head the newest commit
// whose revision is at most rev, assigning revisions as rebuild does: our
// commits carry theirs, any other commit takes the next one.
func (r *Repository) commitAtRevision(head plumbing.Hash, rev int64) (plumbing.Hash, int64, error) {
	var chain []*object.Commit
	for h := head; !h.IsZero(); {
		c, err := object.GetCommit(r.git.Storer(), h)
		if err != nil {
			return plumbing.ZeroHash, 0, fmt.Errorf("read commit %s: %w", h, err)
		}
		chain = append(chain, c)
		h = firstParent(c)
	}
	var (
		found    plumbing.Hash
		foundRev int64
		current  int64 = 1 // an empty branch is at revision 1
	)
	for i := len(chain) - 1; i >= 0; i-- {
		c := chain[i]
		if _, last, ok := parseCommitOps(c.Message); ok && last > current {
			current = last
		} else {
			current++
		}
		if current > rev {
			break
		}
		found, foundRev = c.Hash, current
	}
	if found.IsZero() {
		return plumbing.ZeroHash, 0, fmt.Errorf("no commit at or before revision %d", rev)
	}
	return found, foundRev, nil
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
