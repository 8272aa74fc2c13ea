package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// errMissing: not in the snapshot's packs nor loose.
var errMissing = errors.New("gitrepo: object not in snapshot")

// maxSnapshotRetries bounds how often one read follows a changing pack
// set; each retry means Write, Maintain or git changed the packs.
const maxSnapshotRetries = 8

// object returns the object named h. A miss rescans objects/pack (git may
// have added a pack) before it is reported as plumbing.ErrObjectNotFound;
// a failure on a snapshot that has since been replaced (Maintain closed
// the pack) is retried on the new one.
func (r *Repo) object(h plumbing.Hash) (*storedObject, error) { return r.objectAt(h, 0) }

// objectAt is object at delta depth depth (see maxDeltaDepth).
func (r *Repo) objectAt(h plumbing.Hash, depth int) (*storedObject, error) {
	if o, ok := r.cache.Get(h); ok {
		return o.(*storedObject), nil
	}
	var err error
	for range maxSnapshotRetries {
		set := r.packs.Load()
		if set == nil {
			return nil, ErrClosed
		}
		var o *storedObject
		o, err = r.lookup(set, h, depth)
		if err == nil {
			r.cache.Put(o)
			return o, nil
		}
		if !errors.Is(err, errMissing) {
			if r.packs.Load() != set {
				continue
			}
			return nil, err
		}
		changed, rerr := r.refreshPacks(set)
		if rerr != nil {
			return nil, rerr
		}
		if !changed {
			return nil, plumbing.ErrObjectNotFound
		}
	}
	if errors.Is(err, errMissing) {
		return nil, plumbing.ErrObjectNotFound
	}
	return nil, err
}

// lookup reads h from set's packs, else from its loose file.
func (r *Repo) lookup(set *packSet, h plumbing.Hash, depth int) (*storedObject, error) {
	if p, off, ok := set.find(h); ok {
		return p.readPacked(off, h, depth, r.objectAt)
	}
	o, err := readLoose(r.loosePath(h), h)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errMissing
	}
	return o, err
}

// has reports whether h is stored, without reading it.
func (r *Repo) has(h plumbing.Hash) error {
	if _, ok := r.cache.Get(h); ok {
		return nil
	}
	for range maxSnapshotRetries {
		set := r.packs.Load()
		if set == nil {
			return ErrClosed
		}
		if _, _, ok := set.find(h); ok {
			return nil
		}
		if _, err := os.Stat(r.loosePath(h)); err == nil {
			return nil
		}
		changed, err := r.refreshPacks(set)
		if err != nil {
			return err
		}
		if !changed {
			break
		}
	}
	return plumbing.ErrObjectNotFound
}

func (r *Repo) loosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(r.objDir, hex[:2], hex[2:])
}

// allHashes lists every object in the packs and loose files.
func (r *Repo) allHashes() ([]plumbing.Hash, error) {
	set := r.packs.Load()
	if set == nil {
		return nil, ErrClosed
	}
	if _, err := r.refreshPacks(set); err != nil {
		return nil, err
	}
	if set = r.packs.Load(); set == nil {
		return nil, ErrClosed
	}
	seen := map[plumbing.Hash]struct{}{}
	var out []plumbing.Hash
	add := func(h plumbing.Hash) {
		if _, ok := seen[h]; !ok {
			seen[h] = struct{}{}
			out = append(out, h)
		}
	}
	for _, p := range set.packs {
		for i := range p.idx.n {
			add(p.idx.hash(i))
		}
	}
	dirs, err := os.ReadDir(r.objDir)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if !d.IsDir() || len(d.Name()) != 2 {
			continue
		}
		files, err := os.ReadDir(filepath.Join(r.objDir, d.Name()))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if hex := d.Name() + f.Name(); plumbing.IsHash(hex) {
				add(plumbing.NewHash(hex))
			}
		}
	}
	return out, nil
}
