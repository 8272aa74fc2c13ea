package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Commit writes b's objects and moves ref name from old to new (a zero old:
// name must not exist) as one durable step: when it returns nil both
// survive kill -9 and power loss. It is Write followed by
// CompareAndSwapRef at the cost of one fdatasync instead of four fsync
// rounds: a journal record holding the pack and the ref move is synced,
// then the pack, its index and the ref are written without fsync; Open
// rewrites from the journal whatever of them a crash lost, and a
// checkpoint (a full journal, Maintain, Close) fsyncs them. It returns
// once the objects are readable; the ref file is renamed in the
// background, and reading or updating the ref through r waits for that.
//
// It takes the ref's lock like CompareAndSwapRef, so a concurrent git push
// and we never both win, and returns ErrRefChanged, ErrRefLocked and
// ErrInvalidRef as it does, before anything is written. A record too large
// for the journal is committed the way Write does it, then journaled
// without its pack.
//
// An error after the record is synced (a failed write of the pack: a
// full disk) leaves the commit undecided: the ref is not moved now, but
// the next Open may move it, as the journal asks, unless the ref has moved
// on meanwhile. A failed rename of the ref after Commit returned stops the
// journal (every later Commit fails); the next Open moves the ref.
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
	// Taking the lock (creating a file: a few hundred µs here) and
	// encoding the pack overlap. An encoding done for a Commit that then
	// fails its check is wasted, and nothing else: the pack is written
	// only after the check.
	path := r.refPath(name)
	type locking struct {
		lock *os.File
		err  error
	}
	locked := make(chan locking, 1)
	go func() {
		r.moving.wait(name) // our previous Commit of name may still hold the lock
		lock, err := createLock(r.dir, path+".lock")
		if err != nil {
			err = lockError(r, name, err)
		}
		if err == nil {
			var cur refValue
			var exists bool
			if cur, exists, err = r.readRef(name); err == nil {
				err = expect(name, old)(cur, exists)
			}
			if err == nil && !exists {
				// Found only at the rename, after the record is
				// durable, a conflict would stop the journal.
				err = r.checkNoConflict(name)
			}
			if err != nil {
				lock.Close()
				os.Remove(lock.Name())
				lock = nil
			}
		}
		locked <- locking{lock, err}
	}()
	rec, err := r.prepareRecord(b, name, new, old)
	l := <-locked
	if err == nil {
		err = l.err
	}
	if err == nil {
		err = r.fitRecord(j, rec)
	}
	if err != nil {
		if l.lock != nil {
			l.lock.Close()
			os.Remove(l.lock.Name())
		}
		return err
	}
	lock, ours := l.lock, true
	defer func() {
		if ours {
			lock.Close()
			os.Remove(lock.Name())
		}
	}()
	// The pack and index files are written while the record is synced,
	// under temporary names: named, a pack is visible to Write and other
	// Commits, which take its objects for durable and skip them.
	staged := r.stageAsync(rec.pack)
	release, err := r.appendRecord(j, rec)
	t, serr := staged()
	if err == nil {
		err = serr
	}
	if err != nil {
		if release != nil {
			release()
		}
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
			release()
			return err
		}
	}
	// The objects are readable; the ref is moved in the background, while
	// the caller answers and prepares its next batch. Until it is, reading
	// the ref (readRef) or updating it waits (moving); the checkpoint
	// waits for release. A failure there stops the journal: the commit is
	// durable, and the next Open moves the ref as its record says.
	ours = false
	done := r.moving.start(name)
	go func() {
		defer done()
		defer release()
		if t != nil {
			defer t.release() // the pack's .keep, once the answer is on its way
		}
		_, err := lock.WriteString(refValue{hash: new}.String())
		if cerr := lock.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(lock.Name(), path)
		}
		if err != nil {
			os.Remove(lock.Name())
			j.fail(fmt.Errorf("gitrepo: moving %s after its journal record: %w", name, err))
			return
		}
		r.spare.refill(r.packDir)
	}()
	return nil
}

// prepareRecord encodes the batch's objects not stored yet as a pack,
// within a record.
func (r *Repo) prepareRecord(b *Batch, name plumbing.ReferenceName, new, old plumbing.Hash) (*record, error) {
	rec := &record{name: name, old: old, new: new}
	todo, err := r.unstored(b.objs)
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
		err = r.addPack(p)
	}
	rec.pack = encodedPack{}
	return err
}

// stageAsync writes ep (if any) to temporary files without fsync and
// takes its .keep (place), in the background; the returned function waits
// for it.
func (r *Repo) stageAsync(ep encodedPack) func() (*packTemp, error) {
	if ep.data == nil {
		return func() (*packTemp, error) { return nil, nil }
	}
	type staged struct {
		t   *packTemp
		err error
	}
	done := make(chan staged, 1)
	spare := r.spare.take()
	go func() {
		t, err := r.stageEncoded(ep, false, spare)
		if err == nil {
			if err = t.keep(); err != nil {
				t.remove()
				t = nil
			}
		}
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

// movingRefs are the refs whose Commit returned before renaming the ref's
// lock over it: at most one per ref, since the next Commit of the ref
// waits for it.
type movingRefs struct {
	mu sync.Mutex
	m  map[plumbing.ReferenceName]chan struct{}
}

// start records that name is being moved; done ends that.
func (m *movingRefs) start(name plumbing.ReferenceName) (done func()) {
	ch := make(chan struct{})
	m.mu.Lock()
	if m.m == nil {
		m.m = map[plumbing.ReferenceName]chan struct{}{}
	}
	m.m[name] = ch
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		if m.m[name] == ch {
			delete(m.m, name)
		}
		m.mu.Unlock()
		close(ch)
	}
}

// wait returns once name is not being moved.
func (m *movingRefs) wait(name plumbing.ReferenceName) {
	m.mu.Lock()
	ch := m.m[name]
	m.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// waitAll returns once the refs being moved now are moved.
func (m *movingRefs) waitAll() {
	m.mu.Lock()
	chs := make([]chan struct{}, 0, len(m.m))
	for _, ch := range m.m {
		chs = append(chs, ch)
	}
	m.mu.Unlock()
	for _, ch := range chs {
		<-ch
	}
}
