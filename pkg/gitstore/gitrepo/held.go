package gitrepo

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Held commits: what Commit made durable in the journal but not visible to
// git yet.
//
// Creating a file costs a few hundred µs here, far more than the journal's
// fdatasync that makes a commit durable, and every Commit used to create
// three (its pack, its index and its ref's lock). So Commit now keeps its
// pack in memory, where readers find it, and the ref's new value beside
// its lock, which it keeps across the ref's next Commits. A flush writes
// every held pack as one pack file and moves every held ref once: the
// files of many commits at the cost of one's. It comes once no Commit
// came for flushIdle, and under steady load at the first Commit at least
// flushDelay after the first held one (or once heldMax bytes are held).
// Git (a push into the repository, git log) sees a commit that much
// later; it retries a ref lock for 100 ms by default
// (core.filesRefLockTimeout), longer than a flush waits. Checkpoints,
// Close, ref updates that bypass the journal and Flush flush first.

const (
	// flushIdle: a quiet repository flushes this soon after its last
	// Commit, so that a user's git push right after a write finds the
	// ref where the write left it.
	flushIdle = 3 * time.Millisecond
	// flushDelay: how long a commit stays held under steady load.
	flushDelay = 20 * time.Millisecond
	// heldMax: the held packs' bytes that trigger a flush at once.
	heldMax = 8 << 20
)

// heldRefs is the held state: refs whose new value is not on disk yet,
// their packs, and the refs a flush is moving.
type heldRefs struct {
	mu      sync.Mutex
	refs    map[plumbing.ReferenceName]*heldRef
	moving  map[plumbing.ReferenceName]*heldRef // being renamed by a flush
	claimed map[plumbing.ReferenceName]bool     // a Commit is in progress
	packs   []*pack                             // held in memory, oldest first
	size    int
	since   time.Time     // when the oldest held Commit was put
	timer   *time.Timer   // the next flush, once idle
	urgent  bool          // a flush has been started for heldMax or flushDelay
	flush   func()        // what the timer runs
	idle    time.Duration // flushIdle; tests lengthen it
	delay   time.Duration // flushDelay; tests lengthen it
}

// heldRef is a ref's value not on disk yet, and its lock, which the ref's
// Commits keep until a flush renames it over the ref.
type heldRef struct {
	lock  *os.File
	value plumbing.Hash
	moved chan struct{} // closed once a flush has moved it
}

// claim marks a Commit of name in progress; a second one gets
// ErrRefLocked, as it would from the ref's lock file.
func (h *heldRefs) claim(name plumbing.ReferenceName) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.claimed[name] {
		return fmt.Errorf("%w: %s: another Commit is updating it", ErrRefLocked, name)
	}
	if h.claimed == nil {
		h.claimed = map[plumbing.ReferenceName]bool{}
	}
	h.claimed[name] = true
	return nil
}

func (h *heldRefs) unclaim(name plumbing.ReferenceName) {
	h.mu.Lock()
	delete(h.claimed, name)
	h.mu.Unlock()
}

// get returns name's held entry, if held, and the channel of a flush
// moving it, if one is.
func (h *heldRefs) get(name plumbing.ReferenceName) (held *heldRef, moving <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := h.moving[name]; m != nil {
		return nil, m.moved
	}
	return h.refs[name], nil
}

// value returns name's value if it is held or being moved: readers see a
// commit from the moment Commit returns.
func (h *heldRefs) value(name plumbing.ReferenceName) (plumbing.Hash, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if m := h.moving[name]; m != nil {
		return m.value, true
	}
	if e := h.refs[name]; e != nil {
		return e.value, true
	}
	return plumbing.ZeroHash, false
}

// empty reports whether nothing is held or being moved.
func (h *heldRefs) empty() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.refs) == 0 && len(h.moving) == 0 && len(h.packs) == 0
}

// names returns the held and moving refs below prefix.
func (h *heldRefs) names(prefix string) []plumbing.ReferenceName {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []plumbing.ReferenceName
	for _, m := range []map[plumbing.ReferenceName]*heldRef{h.refs, h.moving} {
		for n := range m {
			if strings.HasPrefix(string(n), prefix) {
				out = append(out, n)
			}
		}
	}
	return out
}

// conflict returns a held or moving ref that name, a ref to be created,
// excludes: one is a directory prefix of the other.
func (h *heldRefs) conflict(name plumbing.ReferenceName) plumbing.ReferenceName {
	for _, n := range h.names("refs/") {
		if strings.HasPrefix(string(n), string(name)+"/") || strings.HasPrefix(string(name), string(n)+"/") {
			return n
		}
	}
	return ""
}

// put holds name at value under lock, with the pack p (nil: none) that
// the value may need, and schedules the flush.
func (h *heldRefs) put(name plumbing.ReferenceName, lock *os.File, value plumbing.Hash, p *pack) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == nil {
		h.refs = map[plumbing.ReferenceName]*heldRef{}
	}
	if e := h.refs[name]; e != nil {
		e.value = value
	} else {
		h.refs[name] = &heldRef{lock: lock, value: value}
	}
	if p != nil {
		h.packs = append(h.packs, p)
		h.size += int(p.size)
	}
	now := time.Now()
	if h.since.IsZero() {
		h.since = now
	}
	switch {
	case h.urgent:
	case h.size >= heldMax || now.Sub(h.since) >= h.delay:
		h.urgent = true
		go h.flush()
	case h.timer == nil:
		h.timer = time.AfterFunc(h.idle, h.flush)
	default:
		h.timer.Reset(h.idle)
	}
}

// take detaches everything held for a flush: the refs become moving
// (readers still see their values; their Commits wait), the packs stay
// readable until the flush replaces them by the file it writes.
func (h *heldRefs) take() (map[plumbing.ReferenceName]*heldRef, []*pack) {
	h.mu.Lock()
	defer h.mu.Unlock()
	refs, packs := h.refs, h.packs
	h.refs, h.packs, h.size, h.urgent, h.since = nil, nil, 0, false, time.Time{}
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	if len(refs) > 0 && h.moving == nil {
		h.moving = map[plumbing.ReferenceName]*heldRef{}
	}
	for name, e := range refs {
		e.moved = make(chan struct{})
		h.moving[name] = e
	}
	return refs, packs
}

// restore holds again what a flush failed to write; the journal has
// failed, so nothing is added to it any more.
func (h *heldRefs) restore(refs map[plumbing.ReferenceName]*heldRef, packs []*pack) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refs == nil {
		h.refs = map[plumbing.ReferenceName]*heldRef{}
	}
	for name, e := range refs {
		h.refs[name] = e
		delete(h.moving, name)
		close(e.moved)
		e.moved = nil
	}
	h.packs = append(packs, h.packs...)
}

// moved ends name's move.
func (h *heldRefs) moved(name plumbing.ReferenceName, e *heldRef) {
	h.mu.Lock()
	delete(h.moving, name)
	h.mu.Unlock()
	close(e.moved)
}

// Flush makes every commit that Commit returned visible to git: held
// packs are written as one pack file and held refs are moved. Commits are
// durable before (the journal); Flush is for the moment git must see them,
// such as before running git on the repository.
func (r *Repo) Flush() error {
	j := r.journal.Load()
	if j == nil || r.held.empty() {
		// Only Commit holds (and creates the journal); a Commit that
		// returned before this call has put what it holds. Ref updates
		// and git runs then cost no wait for other Commits' syncs.
		return nil
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	if r.packs.Load() == nil {
		return ErrClosed // Close flushed what was held
	}
	// No Commit is between its check and its put while inflight is held
	// for writing: what take detaches is complete.
	j.inflight.Lock()
	refs, packs := r.held.take()
	j.inflight.Unlock()
	return r.writeHeld(j, refs, packs)
}

// flushLocked is Flush for a caller holding flushMu and j.inflight.
func (r *Repo) flushLocked(j *journal) error {
	refs, packs := r.held.take()
	return r.writeHeld(j, refs, packs)
}

// flushInBackground is what the held state's timer runs. A failure stops
// the journal (writeHeld), so later Commits report it.
func (r *Repo) flushInBackground() {
	if r.packs.Load() != nil {
		r.Flush()
	}
}

// writeHeld writes the packs as one file, replaces them by it for
// readers, and moves the refs, each to its last value: the packs hold
// every object those values need.
func (r *Repo) writeHeld(j *journal, refs map[plumbing.ReferenceName]*heldRef, packs []*pack) error {
	if len(packs) > 0 {
		ep := *packs[0].held
		if len(packs) > 1 {
			ep = mergeHeld(packs)
		}
		p, err := r.storePack(ep, false)
		if err == nil {
			j.trackPack(p.sum) // for the next checkpoint to fsync
			err = r.replacePacks(p, packs)
		}
		if err != nil {
			err = fmt.Errorf("gitrepo: writing held commits: %w", err)
			j.fail(err)
			r.held.restore(refs, packs)
			return err
		}
	}
	var first error
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		e := refs[name]
		err := moveRef(r.refPath(name), e.lock, e.value, false)
		if err != nil {
			// The commit is durable; the next Open moves the ref.
			err = fmt.Errorf("gitrepo: moving %s after its journal record: %w", name, err)
			j.fail(err)
			if first == nil {
				first = err
			}
		}
		r.held.moved(name, e)
	}
	return first
}

// moveRef writes value into the ref's lock and renames it over the ref;
// durable fsyncs the lock first (the directory is the caller's). A flush
// moves refs without: the journal holds the move until a checkpoint.
func moveRef(path string, lock *os.File, value plumbing.Hash, durable bool) error {
	_, err := lock.WriteString(refValue{hash: value}.String())
	if err == nil && durable {
		err = lock.Sync()
	}
	if cerr := lock.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(lock.Name(), path)
	}
	if err != nil {
		os.Remove(lock.Name())
	}
	return err
}

// mergeHeld lays out the objects of held packs as one pack, duplicates
// dropped, deltas kept with their distance to the base rewritten.
func mergeHeld(packs []*pack) encodedPack {
	at := unplaced(packs)
	size := 12 + hashLen
	for _, p := range packs {
		size += int(p.size)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	pw, _ := startPack(buf, len(at)) // writes to a bytes.Buffer do not fail
	for _, p := range packs {
		// Memory does not fail to read, and held packs were encoded
		// here: an error is a bug.
		if err := copyEntries(pw, p, at, nil); err != nil {
			panic(fmt.Sprintf("gitrepo: merging held pack-%s: %v", p.sum, err))
		}
	}
	sum, _ := pw.end()
	return encodedPack{data: buf.Bytes(), entries: pw.entries, sum: sum}
}

// newHeldPack returns ep as a pack read from memory.
func newHeldPack(ep *encodedPack) (*pack, error) {
	idx, err := decodeIndex(encodeIndex(ep.entries, ep.sum))
	if err != nil {
		return nil, err
	}
	return &pack{sum: ep.sum, idx: idx, f: &memPackData{data: ep.data}, size: int64(len(ep.data)), held: ep}, nil
}

// memPackData reads a held pack's bytes; after Close (the flush replaced
// the pack by its file) reads fail with os.ErrClosed, as a closed file's
// do, and readers retry with the new snapshot.
type memPackData struct {
	data   []byte
	closed atomic.Bool
}

func (m *memPackData) ReadAt(b []byte, off int64) (int, error) {
	if m.closed.Load() {
		return 0, os.ErrClosed
	}
	if off < 0 || off+int64(len(b)) > int64(len(m.data)) {
		return 0, fmt.Errorf("%w: read beyond a held pack", errBadPack)
	}
	return copy(b, m.data[off:]), nil
}

func (m *memPackData) Close() error {
	m.closed.Store(true)
	return nil
}
