package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// packed-refs holds refs git packed (gc, pack-refs, clone): a "# pack-refs
// with:" header, then "<hash> <name>" lines, each maybe followed by
// "^<peeled hash>". We read it fresh on every lookup and only ever remove
// lines from it (DeleteRef); we write refs as loose files.

// forEachPacked calls fn with every packed ref until fn returns false.
func (r *Repo) forEachPacked(fn func(name plumbing.ReferenceName, h plumbing.Hash) bool) error {
	data, err := os.ReadFile(filepath.Join(r.dir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hex, name, ok := bytes.Cut(line, []byte(" "))
		if !ok || !plumbing.IsHash(string(hex)) {
			return fmt.Errorf("%w: packed-refs line %q", ErrCorruptRef, line)
		}
		if !fn(plumbing.ReferenceName(bytes.TrimSpace(name)), plumbing.NewHash(string(hex))) {
			return nil
		}
	}
	return nil
}

// packedRef looks name up in packed-refs.
func (r *Repo) packedRef(name plumbing.ReferenceName) (h plumbing.Hash, found bool, err error) {
	err = r.forEachPacked(func(n plumbing.ReferenceName, v plumbing.Hash) bool {
		if n == name {
			h, found = v, true
		}
		return !found
	})
	return h, found, err
}

// removePacked rewrites packed-refs without name, under git's
// packed-refs.lock, durably. The caller holds name's own lock.
func (r *Repo) removePacked(name plumbing.ReferenceName) error {
	path := filepath.Join(r.dir, "packed-refs")
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: packed-refs", ErrRefLocked)
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err == nil {
		_, err = f.Write(withoutPacked(data, name))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock, path)
	}
	if err != nil {
		os.Remove(lock)
		return err
	}
	return syncDir(r.dir)
}

// withoutPacked drops name's line and its peeled line.
func withoutPacked(data []byte, name plumbing.ReferenceName) []byte {
	out := make([]byte, 0, len(data))
	skipping := false
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		keep := true
		switch {
		case len(line) == 0 || line[0] == '#':
			skipping = false
		case line[0] == '^':
			keep = !skipping
		default:
			_, n, _ := bytes.Cut(line, []byte(" "))
			skipping = string(bytes.TrimSpace(n)) == string(name)
			keep = !skipping
		}
		if keep {
			out = append(out, data[:len(data)-len(rest)]...)
		}
		data = rest
	}
	return out
}
