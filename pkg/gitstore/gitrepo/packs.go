package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// packSet is an immutable snapshot of the open packs, newest first.
// Readers load it without locking; Write, Maintain and a reader that
// missed an object publish a new one (Repo.packs, under Repo.packsMu) and
// only then close the packs that left it, so a reader holding the old
// snapshot sees os.ErrClosed and retries with the new one.
type packSet struct {
	packs []*pack
}

// find returns the pack holding h and the object's offset there.
func (s *packSet) find(h plumbing.Hash) (*pack, int64, bool) {
	for _, p := range s.packs {
		if i := p.idx.find(h); i >= 0 {
			return p, p.idx.offset(i), true
		}
	}
	return nil, 0, false
}

func (s *packSet) get(sum plumbing.Hash) *pack {
	for _, p := range s.packs {
		if p.sum == sum {
			return p
		}
	}
	return nil
}

// publish installs set as the current snapshot and closes the packs of
// old that set no longer holds (the very pack: a file and a held pack may
// share a name). Callers hold r.packsMu.
func (r *Repo) publish(old, set *packSet) {
	r.packs.Store(set)
	for _, p := range old.packs {
		if !slices.Contains(set.packs, p) {
			p.f.Close()
		}
	}
}

// addPack makes a pack just written (or held) visible to readers. It
// reports false, closing p, when the snapshot has the pack already: the
// same objects written again.
func (r *Repo) addPack(p *pack) (bool, error) {
	r.packsMu.Lock()
	defer r.packsMu.Unlock()
	cur := r.packs.Load()
	if cur == nil {
		p.f.Close()
		return false, ErrClosed
	}
	if cur.get(p.sum) != nil {
		p.f.Close()
		return false, nil
	}
	r.publish(cur, &packSet{packs: append([]*pack{p}, cur.packs...)})
	return true, nil
}

// replacePacks swaps the packs merged by Maintain for the merged one.
func (r *Repo) replacePacks(merged *pack, gone []*pack) error {
	r.packsMu.Lock()
	defer r.packsMu.Unlock()
	cur := r.packs.Load()
	if cur == nil {
		merged.f.Close()
		return ErrClosed
	}
	next := &packSet{packs: []*pack{merged}}
	for _, p := range cur.packs {
		if p.sum != merged.sum && !slices.ContainsFunc(gone, func(g *pack) bool { return g.sum == p.sum }) {
			next.packs = append(next.packs, p)
		}
	}
	r.publish(cur, next)
	return nil
}

// refreshPacks makes the snapshot match objects/pack, where git may have
// added packs (a push) or removed them (gc). It reports whether the
// snapshot differs from seen, the one a reader missed in; if it already
// does, it does not look at the disk. A nil seen always looks.
func (r *Repo) refreshPacks(seen *packSet) (bool, error) {
	r.packsMu.Lock()
	defer r.packsMu.Unlock()
	cur := r.packs.Load()
	if cur == nil {
		return false, ErrClosed
	}
	if seen != nil && cur != seen {
		return true, nil
	}
	sums, err := listPacks(r.packDir)
	if err != nil {
		return false, err
	}
	next := &packSet{}
	for _, p := range cur.packs {
		if p.held != nil { // in memory, not on disk yet
			next.packs = append(next.packs, p)
		}
	}
	for _, sum := range sums {
		if p := cur.get(sum); p != nil {
			if p.held == nil {
				next.packs = append(next.packs, p)
			}
			// A held pack of that name serves its objects until the
			// flush replaces it; the file is found after.
			continue
		}
		p, err := openPack(r.packDir, sum)
		if errors.Is(err, fs.ErrNotExist) {
			continue // being removed (the pack goes first)
		}
		if err != nil {
			return false, err
		}
		next.packs = append([]*pack{p}, next.packs...)
	}
	if len(next.packs) == len(cur.packs) && allIn(cur, next) {
		return false, nil
	}
	r.publish(cur, next)
	return true, nil
}

func allIn(a, b *packSet) bool {
	for _, p := range a.packs {
		if b.get(p.sum) != p {
			return false
		}
	}
	return true
}

// listPacks returns the packs named by an index in packDir, as git finds
// them.
func listPacks(packDir string) ([]plumbing.Hash, error) {
	ents, err := os.ReadDir(packDir)
	if err != nil {
		return nil, err
	}
	var sums []plumbing.Hash
	for _, e := range ents {
		if sum, ok := packName(e.Name(), ".idx"); ok {
			sums = append(sums, sum)
		}
	}
	return sums, nil
}

// packName parses "pack-<40 hex><ext>".
func packName(name, ext string) (plumbing.Hash, bool) {
	hex, ok := strings.CutPrefix(name, "pack-")
	if !ok {
		return plumbing.ZeroHash, false
	}
	hex, ok = strings.CutSuffix(hex, ext)
	if !ok || !plumbing.IsHash(hex) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(hex), true
}
