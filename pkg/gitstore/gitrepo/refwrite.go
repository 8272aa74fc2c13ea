package gitrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
)

// updateRef changes a reference with git's lock protocol, so that a
// concurrent git push or update-ref and we never both win: create
// <ref>.lock exclusively, check the current value, write the new one into
// the lock, fsync it, rename it over the ref and fsync the directory. A
// nil value deletes the ref (packed-refs first, then the loose file, so a
// crash cannot resurrect an older packed value). Held commits are flushed
// first, and a ref the journal's current epoch moves is checkpointed
// first (checkpointIfJournaled).
func (r *Repo) updateRef(name plumbing.ReferenceName, check func(refValue, bool) error, v *refValue) error {
	if err := checkRefName(name); err != nil {
		return err
	}
	if r.packs.Load() == nil {
		return ErrClosed
	}
	path := r.refPath(name)
	dir := filepath.Dir(path)
	lock := path + ".lock"
	// Held refs go to disk first: name's lock is Commit's while it is
	// held, and a held ref not on disk yet could conflict with name.
	if err := r.Flush(); err != nil {
		return err
	}
	f, err := createLock(r.dir, lock)
	if err != nil {
		return lockError(r, name, err)
	}
	if err := r.checkpointIfJournaled(name); err != nil {
		f.Close()
		os.Remove(lock)
		return err
	}
	if v == nil {
		f.Close()
		err := r.deleteLocked(name, path, check)
		if rerr := os.Remove(lock); err == nil {
			err = rerr
		}
		if err == nil {
			r.pruneRefDirs(dir)
		}
		return err
	}
	if err := r.writeLocked(f, name, check, v); err != nil {
		os.Remove(lock)
		return err
	}
	// Past the rename the lock is gone; removing it then could remove a
	// lock someone else has taken since.
	if err := os.Rename(lock, path); err != nil {
		os.Remove(lock)
		return err
	}
	return syncDir(dir)
}

// lockError explains a failure to create name's lock file: held by
// someone else, or impossible because a ref is where a directory of the
// path must be (refs/heads/a blocks refs/heads/a/b.lock).
func lockError(r *Repo, name plumbing.ReferenceName, err error) error {
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrRefLocked, name)
	}
	if errors.Is(err, syscall.ENOTDIR) {
		if cerr := r.checkNoConflict(name); cerr != nil {
			return cerr
		}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// createLock creates a lock file exclusively, and its directory durably.
// A delete of a sibling ref may remove the directory just created (as git
// prunes empty ones), hence the retries.
func createLock(root, lock string) (f *os.File, err error) {
	for range 3 {
		if err = mkdirAllDurable(root, filepath.Dir(lock)); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrNotExist) {
			return f, err
		}
	}
	return nil, err
}

// writeLocked checks the current value and writes v into the lock file f,
// durably. It closes f.
func (r *Repo) writeLocked(f *os.File, name plumbing.ReferenceName, check func(refValue, bool) error, v *refValue) (err error) {
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	cur, exists, err := r.readRef(name)
	if err != nil {
		return err
	}
	if err := check(cur, exists); err != nil {
		return err
	}
	if !exists {
		if err := r.checkNoConflict(name); err != nil {
			return err
		}
	}
	if _, err := f.WriteString(v.String()); err != nil {
		return err
	}
	return f.Sync()
}

// deleteLocked removes name while its lock is held.
func (r *Repo) deleteLocked(name plumbing.ReferenceName, path string, check func(refValue, bool) error) error {
	cur, exists, err := r.readRef(name)
	if err != nil {
		return err
	}
	if err := check(cur, exists); err != nil {
		return err
	}
	if _, packed, err := r.packedRef(name); err != nil {
		return err
	} else if packed {
		if err := r.removePacked(name); err != nil {
			return err
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// pruneRefDirs removes directories emptied by a delete, up to refs/x/, as
// git does, so that they cannot block a ref of the same name later.
func (r *Repo) pruneRefDirs(dir string) {
	refs := filepath.Join(r.dir, "refs")
	for filepath.Dir(filepath.Dir(dir)) != r.dir && strings.HasPrefix(dir, refs+string(filepath.Separator)) {
		if os.Remove(dir) != nil { // not empty
			return
		}
		dir = filepath.Dir(dir)
	}
}
