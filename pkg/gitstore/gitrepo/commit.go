package gitrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commit writes b's objects and moves ref name from old to new (a zero old:
// name must not exist) as one durable step: when it returns nil both
// survive kill -9 and power loss. It is Write followed by
// CompareAndSwapRef at the cost of one fdatasync instead of four fsync
// rounds: a journal record holding the pack and the ref move is synced,
// then the pack, its index and the ref are written without fsync; Open
// rewrites from the journal whatever of them a crash lost, and a
// checkpoint (a full journal, Maintain, Close) fsyncs them.
//
// It takes the ref's lock like CompareAndSwapRef, so a concurrent git push
// and we never both win, and returns ErrRefChanged, ErrRefLocked and
// ErrInvalidRef as it does, before anything is written. A record too large
// for the journal is committed the way Write does it, then journaled
// without its pack.
//
// An error after the record is synced (a failed write of the pack or
// ref: a full disk) leaves the commit undecided: the ref is not moved
// now, but the next Open may move it, as the journal asks, unless the ref
// has moved on meanwhile.
func (r *Repo) Commit(b *Batch, name plumbing.ReferenceName, new, old plumbing.Hash) error {
	if new.IsZero() {
		return fmt.Errorf("%w: zero hash for %s (use DeleteRef)", ErrInvalidRef, name)
	}
	if err := checkRefName(name); err != nil {
		return err
	}
	if r.packs.Load() == nil {
		return ErrClosed
	}
	j, err := r.openedJournal()
	if err != nil {
		return err
	}
	path := r.refPath(name)
	lock, err := createLock(r.dir, path+".lock")
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s", ErrRefLocked, name)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			lock.Close()
			os.Remove(lock.Name())
		}
	}()
	cur, exists, err := r.readRef(name)
	if err != nil {
		return err
	}
	if err := expect(name, old)(cur, exists); err != nil {
		return err
	}
	rec, err := r.prepareRecord(j, b, name, new, old)
	if err != nil {
		return err
	}
	// The pack and index files are written while the record is synced,
	// under temporary names: named, a pack is visible to Write and other
	// Commits, which take its objects for durable and skip them.
	staged := r.stageAsync(rec.pack)
	release, err := r.appendRecord(j, rec)
	t, serr := staged()
	if err == nil {
		defer release()
		err = serr
	}
	if err != nil {
		if t != nil {
			t.remove()
		}
		return err
	}
	// Durable from here on: the rest only has to happen before the next
	// checkpoint, which waits for release.
	if t != nil {
		p, err := t.place(false)
		if err == nil {
			err = r.addPack(p)
		}
		if err != nil {
			return err
		}
	}
	if _, err := lock.WriteString(refValue{hash: new}.String()); err != nil {
		return err
	}
	if err := lock.Close(); err != nil {
		return err
	}
	if err := os.Rename(lock.Name(), path); err != nil {
		return err
	}
	renamed = true
	return nil
}

// prepareRecord encodes the batch's objects not stored yet as a pack,
// within a record. A record the journal can never hold gets its pack
// written durably now, and goes without it.
func (r *Repo) prepareRecord(j *journal, b *Batch, name plumbing.ReferenceName, new, old plumbing.Hash) (*record, error) {
	rec := &record{name: name, old: old, new: new}
	todo, err := r.unstored(b.objs)
	if err != nil || len(todo) == 0 {
		return rec, err
	}
	rec.pack = encodePack(todo)
	if j.fits(rec.payloadLen()) {
		return rec, nil
	}
	p, err := r.storePack(rec.pack, true)
	if err == nil {
		err = r.addPack(p)
	}
	rec.pack = encodedPack{}
	return rec, err
}

// stageAsync writes ep (if any) to temporary files without fsync, in the
// background; the returned function waits for it.
func (r *Repo) stageAsync(ep encodedPack) func() (*packTemp, error) {
	if ep.data == nil {
		return func() (*packTemp, error) { return nil, nil }
	}
	type staged struct {
		t   *packTemp
		err error
	}
	done := make(chan staged, 1)
	go func() {
		t, err := r.stageEncoded(ep, false)
		done <- staged{t, err}
	}()
	return func() (*packTemp, error) {
		s := <-done
		return s.t, s.err
	}
}

// appendRecord appends rec to the journal and syncs it, checkpointing
// first when the journal is full. On success the caller holds j.inflight
// for reading until it calls release, after writing rec's files.
func (r *Repo) appendRecord(j *journal, rec *record) (release func(), err error) {
	data, crc := rec.encode()
	for {
		j.inflight.RLock()
		end, err := j.append(data, crc, rec.name, rec.pack.sum)
		if errors.Is(err, errJournalFull) {
			j.inflight.RUnlock()
			if err := r.checkpoint(j); err != nil {
				return nil, err
			}
			continue
		}
		if err == nil {
			err = j.sync(end)
		}
		if err != nil {
			j.inflight.RUnlock()
			return nil, err
		}
		return j.inflight.RUnlock, nil
	}
}

// openedJournal returns the journal, creating it on the first Commit: a
// repository that never commits this way pays nothing for it.
func (r *Repo) openedJournal() (*journal, error) {
	if j := r.journal.Load(); j != nil {
		return j, nil
	}
	r.journalMu.Lock()
	defer r.journalMu.Unlock()
	if r.journalClosed || r.packs.Load() == nil {
		return nil, ErrClosed
	}
	if j := r.journal.Load(); j != nil {
		return j, nil
	}
	j, err := createJournal(r.dir, r.journalMax)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Join(journalDirName, journalFileName), err)
	}
	r.journal.Store(j)
	return j, nil
}
