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

var (
	// ErrRefChanged: the reference does not hold the expected value.
	ErrRefChanged = errors.New("gitrepo: reference changed")
	// ErrRefLocked: someone else (git, or another goroutine) holds the
	// reference's lock file right now. Retrying later may succeed.
	ErrRefLocked = errors.New("gitrepo: reference locked")
	// ErrInvalidRef: the name is not a valid reference name.
	ErrInvalidRef = errors.New("gitrepo: invalid reference name")
	// ErrCorruptRef: a reference file holds neither a hash nor "ref: ".
	ErrCorruptRef = errors.New("gitrepo: corrupt reference")
	// ErrRefConflict: the reference cannot be created beside another one.
	// Git keeps refs as files, so refs/heads/a and refs/heads/a/b exclude
	// each other (loose or packed). No retry helps; one of them must go.
	ErrRefConflict = errors.New("gitrepo: reference conflicts with another")
)

// maxSymrefDepth is git's limit on chains of symbolic references.
const maxSymrefDepth = 5

// refValue is the content of a reference: a hash, or the name of another
// reference when target is set.
type refValue struct {
	hash   plumbing.Hash
	target plumbing.ReferenceName
}

func (v refValue) String() string {
	if v.target != "" {
		return "ref: " + string(v.target) + "\n"
	}
	return v.hash.String() + "\n"
}

func checkRefName(name plumbing.ReferenceName) error {
	if name != plumbing.HEAD && (!strings.HasPrefix(string(name), "refs/") || name.Validate() != nil || !name.IsSafe()) {
		return fmt.Errorf("%w: %q", ErrInvalidRef, name)
	}
	return nil
}

func (r *Repo) refPath(name plumbing.ReferenceName) string {
	return filepath.Join(r.dir, filepath.FromSlash(string(name)))
}

// Ref returns the hash name points to, following symbolic references, or
// the zero hash when it does not exist. It reads a value Commit holds
// (held.go), else the loose file, then packed-refs, fresh from disk on
// every call, so it sees git's pushes.
func (r *Repo) Ref(name plumbing.ReferenceName) (plumbing.Hash, error) {
	for range maxSymrefDepth {
		if err := checkRefName(name); err != nil {
			return plumbing.ZeroHash, err
		}
		v, ok, err := r.readRef(name)
		if err != nil || !ok {
			return plumbing.ZeroHash, err
		}
		if v.target == "" {
			return v.hash, nil
		}
		name = v.target
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: symbolic references nested deeper than %d", ErrCorruptRef, maxSymrefDepth)
}

// readRef reads name's own value, without following symbolic references.
// A loose file wins over packed-refs, as in git.
func (r *Repo) readRef(name plumbing.ReferenceName) (refValue, bool, error) {
	if h, ok := r.held.value(name); ok {
		return refValue{hash: h}, true, nil // committed, not on disk yet (held.go)
	}
	data, err := os.ReadFile(r.refPath(name))
	switch {
	case err == nil:
		v, err := parseRef(data)
		if err != nil {
			return refValue{}, false, fmt.Errorf("%s: %w", name, err)
		}
		return v, true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		// No loose ref (a directory of that name holds others).
	default:
		return refValue{}, false, err
	}
	h, ok, err := r.packedRef(name)
	return refValue{hash: h}, ok, err
}

func parseRef(data []byte) (refValue, error) {
	s := string(data)
	if t, ok := strings.CutPrefix(s, "ref:"); ok {
		return refValue{target: plumbing.ReferenceName(strings.TrimSpace(t))}, nil
	}
	if len(s) < 40 || !plumbing.IsHash(s[:40]) || strings.TrimSpace(s[40:]) != "" {
		return refValue{}, fmt.Errorf("%w: %q", ErrCorruptRef, s)
	}
	return refValue{hash: plumbing.NewHash(s[:40])}, nil
}

// CompareAndSwapRef sets name to new if it currently holds old; a zero old
// means name must not exist. It returns ErrRefChanged when the current
// value differs and ErrRefLocked when the ref's lock is held. Once it
// returns nil the new value is durable.
func (r *Repo) CompareAndSwapRef(name plumbing.ReferenceName, new, old plumbing.Hash) error {
	if new.IsZero() {
		return fmt.Errorf("%w: zero hash for %s (use DeleteRef)", ErrInvalidRef, name)
	}
	return r.updateRef(name, expect(name, old), &refValue{hash: new})
}

// DeleteRef removes name, loose and packed, if it currently holds old.
func (r *Repo) DeleteRef(name plumbing.ReferenceName, old plumbing.Hash) error {
	if old.IsZero() {
		return fmt.Errorf("%w: zero hash for %s", ErrInvalidRef, name)
	}
	return r.updateRef(name, expect(name, old), nil)
}

// expect returns a check that the ref holds old (zero: does not exist).
func expect(name plumbing.ReferenceName, old plumbing.Hash) func(refValue, bool) error {
	return func(cur refValue, exists bool) error {
		if cur.target != "" {
			return fmt.Errorf("%w: %s is a symbolic reference", ErrRefChanged, name)
		}
		if cur.hash != old || exists == old.IsZero() {
			return fmt.Errorf("%w: %s is %s, not %s", ErrRefChanged, name, cur.hash, old)
		}
		return nil
	}
}

// checkNoConflict returns ErrRefConflict, naming the other ref, when name
// (which does not exist) cannot be created because a ref is a directory
// prefix of it or lies below it, as a loose file or in packed-refs. It is
// checked before anything is written: found only when renaming the lock
// over the ref, the conflict would come after the write was made durable.
func (r *Repo) checkNoConflict(name plumbing.ReferenceName) error {
	other, err := r.conflictingRef(name)
	if err != nil || other == "" {
		return err
	}
	return fmt.Errorf("%w: %s cannot be created while %s exists", ErrRefConflict, name, other)
}

func (r *Repo) conflictingRef(name plumbing.ReferenceName) (plumbing.ReferenceName, error) {
	if other := r.held.conflict(name); other != "" { // not on disk yet
		return other, nil
	}
	parts := strings.Split(string(name), "/")
	// Prefixes below "refs/<kind>/": refs/heads/a for refs/heads/a/b.
	for i := 3; i < len(parts); i++ {
		prefix := plumbing.ReferenceName(strings.Join(parts[:i], "/"))
		if fi, err := os.Stat(r.refPath(prefix)); err == nil && fi.Mode().IsRegular() {
			return prefix, nil
		}
	}
	// Refs below: refs/heads/a/b for refs/heads/a.
	var below plumbing.ReferenceName
	if fi, err := os.Stat(r.refPath(name)); err == nil && fi.IsDir() {
		names, err := r.refNames(string(name)+"/", false)
		if err != nil {
			return "", err
		}
		if len(names) > 0 {
			return names[0], nil
		}
	}
	err := r.forEachPacked(func(n plumbing.ReferenceName, _ plumbing.Hash) bool {
		if strings.HasPrefix(string(n), string(name)+"/") || strings.HasPrefix(string(name), string(n)+"/") {
			below = n
		}
		return below == ""
	})
	return below, err
}
