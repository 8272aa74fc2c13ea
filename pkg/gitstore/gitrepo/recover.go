package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// recoverJournal replays the journal's current epoch, which holds the
// Commits since the last checkpoint, when the last writer died without
// Close: it writes again every pack or index a crash lost or damaged,
// puts back refs whose move was lost, then checkpoints. Open calls it
// before anything reads packs or refs.
func (r *Repo) recoverJournal() error {
	j, recs, err := openJournal(r.dir, r.journalMax)
	if j == nil || err != nil {
		return err
	}
	err = r.replay(recs)
	if err == nil {
		for _, rec := range recs {
			j.track(rec.name, rec.pack.sum) // kill -9 leaves them in the page cache only
		}
		err = r.checkpoint(j)
	}
	if err != nil {
		j.close()
		return fmt.Errorf("recover %s: %w", filepath.Join(journalDirName, journalFileName), err)
	}
	r.journal.Store(j)
	return nil
}

func (r *Repo) replay(recs []*record) error {
	for _, rec := range recs {
		if err := r.restorePack(rec.pack); err != nil {
			return err
		}
	}
	var names []plumbing.ReferenceName
	byName := map[plumbing.ReferenceName][]*record{}
	for _, rec := range recs {
		if byName[rec.name] == nil {
			names = append(names, rec.name)
		}
		byName[rec.name] = append(byName[rec.name], rec)
	}
	for _, name := range names {
		if err := r.restoreRef(name, byName[name]); err != nil {
			return err
		}
	}
	return nil
}

// restorePack writes ep and its index again unless both are on disk as
// Commit wrote them. A crash may have left either missing, empty or
// partial (they were not fsynced), and Maintain or git gc may have merged
// the pack away; a duplicate of objects stored elsewhere is harmless.
func (r *Repo) restorePack(ep encodedPack) error {
	if ep.data == nil || r.packIntact(ep) {
		return nil
	}
	p, err := r.storePack(ep, false)
	if err != nil {
		return err
	}
	return p.f.Close()
}

func (r *Repo) packIntact(ep encodedPack) bool {
	data, err := os.ReadFile(packPath(r.packDir, ep.sum, ".pack"))
	if err != nil || !bytes.Equal(data, ep.data) {
		return false
	}
	idx, err := os.ReadFile(packPath(r.packDir, ep.sum, ".idx"))
	return err == nil && bytes.Equal(idx, encodeIndex(ep.entries, ep.sum))
}

// restoreRef sets name to the new value of its last record (recs, in
// journal order) when the ref shows that a move of ours was lost: it is
// missing or unparsable (the rename of a file not fsynced can be durable
// before its content), or holds a value some record moved it from or
// through. A value no record mentions was set by someone else (git push)
// after our last move, and is left alone.
func (r *Repo) restoreRef(name plumbing.ReferenceName, recs []*record) error {
	last := recs[len(recs)-1].new
	ours := map[plumbing.Hash]bool{}
	for _, rec := range recs {
		ours[rec.old] = true
		if rec.new != last {
			ours[rec.new] = true
		}
	}
	cur, exists, err := r.readRef(name)
	switch {
	case errors.Is(err, ErrCorruptRef), err == nil && !exists:
	case err != nil:
		return err
	case cur.target != "" || cur.hash == last || !ours[cur.hash]:
		return nil
	}
	return r.forceRef(name, last)
}

// forceRef sets name to h durably, whatever it holds now, under the ref's
// lock. Only recovery uses it, while Open holds the repository.
func (r *Repo) forceRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	path := r.refPath(name)
	f, err := createLock(r.dir, path+".lock")
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := moveRef(path, f, h, true); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
