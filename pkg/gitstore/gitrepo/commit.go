package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commit writes b's objects and moves ref name from old to new (a zero old:
// name must not exist) as one durable step: when it returns nil both
// survive kill -9 and power loss. It is Write followed by
// CompareAndSwapRef at the cost of one fdatasync instead of four fsync
// rounds and three new files: a journal record holding the pack and the
// ref move is synced, and the pack and the ref's value are held in memory
// (held.go), where reads through r find them at once. A flush soon after
// writes the packs of many Commits as one file and moves their refs, so
// git sees the commit a few milliseconds later; Open rewrites from the
// journal whatever a crash lost, and a checkpoint (a full journal,
// Maintain, Close) fsyncs what flushes wrote.
//
// It takes the ref's lock like CompareAndSwapRef (and keeps it while the
// ref is held), so a concurrent git push and we never both win, and
// returns ErrRefChanged, ErrRefLocked and ErrInvalidRef as it does, before
// anything is written. A record too large for the journal is committed
// the way Write does it, then journaled without its pack.
//
// An error after the record is synced (a failed journal sync: a full
// disk) leaves the commit undecided: the ref is not moved now, but the
// next Open may move it, as the journal asks, unless the ref has moved on
// meanwhile. A flush that fails to write stops the journal (every later
// Commit fails); the next Open writes what it held.
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
	if err := r.held.claim(name); err != nil {
		return err
	}
	defer r.held.unclaim(name)
	rec, err := r.prepareRecord(b, name, new, old)
	if err == nil {
		err = r.fitRecord(j, rec)
	}
	if err != nil {
		return err
	}
	var hp *pack
	if rec.pack.data != nil {
		if hp, err = newHeldPack(&rec.pack); err != nil {
			return err
		}
	}
	data, crc := rec.encode()
	var lock *os.File // the ref's lock, taken here when the ref is not held
	defer func() {
		if lock != nil {
			lock.Close()
			os.Remove(lock.Name())
		}
	}()
	for {
		// A flush takes what is held with inflight locked for writing,
		// so from the check to put the ref cannot start moving.
		j.inflight.RLock()
		held, moving := r.held.get(name)
		if moving != nil {
			j.inflight.RUnlock()
			<-moving
			continue
		}
		if held != nil {
			err = expect(name, old)(refValue{hash: held.value}, true)
		} else {
			err = r.checkUnheld(name, old, &lock)
		}
		if err != nil {
			j.inflight.RUnlock()
			return err
		}
		end, err := j.append(data, crc, name, rec.pack.sum)
		if errors.Is(err, errJournalFull) {
			j.inflight.RUnlock()
			if err := r.checkpoint(j); err != nil {
				return err
			}
			continue
		}
		if err == nil {
			err = j.sync(end)
		}
		// Durable from here on: the record is the commit. Its pack and
		// ref are held until a flush writes them (held.go).
		if err == nil && hp != nil {
			var added bool
			if added, err = r.addPack(hp); !added {
				hp = nil // the same objects are there already
			}
		}
		if err != nil {
			j.inflight.RUnlock()
			return err
		}
		r.held.put(name, lock, new, hp)
		lock = nil // the held ref's now
		j.inflight.RUnlock()
		return nil
	}
}

// checkUnheld checks a ref that is not held: it takes the ref's lock (once:
// *lock keeps it across retries), so a concurrent git push and we never
// both win, and compares the value on disk with old.
func (r *Repo) checkUnheld(name plumbing.ReferenceName, old plumbing.Hash, lock **os.File) error {
	if *lock == nil {
		// A held ref is not on disk yet: its name must not become a
		// directory of name's lock, nor name one of its.
		if other := r.held.conflict(name); other != "" {
			return fmt.Errorf("%w: %s cannot be created while %s exists", ErrRefConflict, name, other)
		}
		f, err := createLock(r.dir, r.refPath(name)+".lock")
		if err != nil {
			return lockError(r, name, err)
		}
		*lock = f
	}
	cur, exists, err := r.readRef(name)
	if err == nil {
		err = expect(name, old)(cur, exists)
	}
	if err == nil && !exists {
		// Found only at the flush, after the record is durable, a
		// conflict would stop the journal.
		err = r.checkNoConflict(name)
	}
	return err
}

// prepareRecord encodes the batch's objects not stored yet as a pack,
// within a record.
func (r *Repo) prepareRecord(b *Batch, name plumbing.ReferenceName, new, old plumbing.Hash) (*record, error) {
	rec := &record{name: name, old: old, new: new}
	todo, err := r.unstored(b.objs, true)
	if err != nil || len(todo) == 0 {
		return rec, err
	}
	rec.pack = encodePack(todo, &r.versions)
	return rec, nil
}

// fitRecord makes rec fit the journal: a record the journal can never
// hold gets its pack written durably now, and goes without it.
func (r *Repo) fitRecord(j *journal, rec *record) error {
	if rec.pack.data == nil || j.fits(rec.payloadLen()) {
		return nil
	}
	p, err := r.storePack(rec.pack, true)
	if err == nil {
		_, err = r.addPack(p)
	}
	rec.pack = encodedPack{}
	return err
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
