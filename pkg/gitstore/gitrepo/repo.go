// Package gitrepo is the durable write path of a bare git repository: it
// writes batches of objects as one pack each and moves refs with git's own
// lock protocol, fsyncing everything a crash or power loss could lose, and
// serves reads to go-git through a lock-free object store.
//
// One process writes a repository: Open takes an advisory lock
// (heaven.lock) and clears what a crashed writer left behind, including
// stale ref locks, so no git command may be writing refs while Open runs.
// Afterwards git may push into, fetch from and read the repository at any
// time; its refs and objects are seen at once, and git sees a Commit a few
// milliseconds after it returns (held.go), or at once after Flush.
//
// Crash safety rests on ordering: Write returns after the pack, its index
// and their directory entry are durable; CompareAndSwapRef is called after
// Write; so a ref never names an object that is not on disk. Commit does
// both with one fdatasync of a write-ahead journal (journal.go), which
// Open replays.
package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

var (
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("gitrepo: repository closed")
	// ErrNotRepository: Open found a non-empty directory that is not a
	// git repository.
	ErrNotRepository = errors.New("gitrepo: not a git repository")
	// ErrInUse: another process has the repository open.
	ErrInUse = errors.New("gitrepo: repository in use by another process")
)

// objectCacheSize bounds the decoded objects kept for readers.
const objectCacheSize = 64 * cache.MiByte

// Repo is a bare git repository: go-git storage for reads, durable
// batched writes. All methods are safe for concurrent use.
type Repo struct {
	dir, objDir, packDir string
	flock                *os.File
	cache                *cache.ObjectLRU
	maxPacks             int           // see maxPacks; a field so tests can lower it
	journalMax           int64         // see defaultJournalMax; tests lower it before the first Commit
	checkpointAge        time.Duration // see defaultCheckpointAge

	// Lock order: a Commit's claim of its ref, a ref's lock file,
	// maintainMu or journalMu, then flushMu, then the journal's inflight,
	// then packsMu; writeMu, then packsMu.
	writeMu    sync.Mutex // one Write at a time
	maintainMu sync.Mutex // one Maintain at a time
	flushMu    sync.Mutex // one flush at a time (held.go)
	packsMu    sync.Mutex // serializes changes of packs
	packs      atomic.Pointer[packSet]

	held     heldRefs     // Commits not on disk yet (held.go)
	versions versionBases // bases for trees' next versions (versions.go)

	journalMu     sync.Mutex // guards creating (first Commit) and closing the journal
	journal       atomic.Pointer[journal]
	journalClosed bool
}

// Open opens the bare repository at dir, creating it (HEAD naming
// refs/heads/main) when dir is missing or empty.
func Open(dir string) (*Repo, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := initIfEmpty(dir); err != nil {
		return nil, err
	}
	r := &Repo{
		dir:           dir,
		objDir:        filepath.Join(dir, "objects"),
		packDir:       filepath.Join(dir, "objects", "pack"),
		cache:         cache.NewObjectLRU(objectCacheSize),
		maxPacks:      maxPacks,
		journalMax:    defaultJournalMax,
		checkpointAge: defaultCheckpointAge,
	}
	r.held.flush, r.held.idle, r.held.delay = r.flushInBackground, flushIdle, flushDelay
	if err := mkdirAllDurable(dir, r.packDir); err != nil {
		return nil, err
	}
	if r.flock, err = lockRepo(dir); err != nil {
		return nil, err
	}
	if err := r.removeLeftovers(); err != nil {
		r.flock.Close()
		return nil, err
	}
	if err := r.recoverJournal(); err != nil {
		r.flock.Close()
		return nil, err
	}
	r.packs.Store(&packSet{})
	if _, err := r.refreshPacks(r.packs.Load()); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// lockRepo takes an exclusive advisory lock on dir/heaven.lock. The kernel
// drops it when the process dies, so it is never stale.
func lockRepo(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "heaven.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrInUse, dir)
		}
		return nil, err
	}
	return f, nil
}

// Dir returns the repository's absolute path.
func (r *Repo) Dir() string { return r.dir }

// Storer returns go-git storage over the repository, safe for concurrent
// use. Objects are read-only (write them with Write); reference writes go
// through the same durable path as CompareAndSwapRef.
func (r *Repo) Storer() storer.Storer { return &repoStorer{r: r} }

// Close checkpoints the journal (so the next Open has nothing to replay)
// and releases the repository's files and lock. Reads and writes
// afterwards fail with ErrClosed.
func (r *Repo) Close() error {
	err := r.closeJournal()
	r.packsMu.Lock()
	defer r.packsMu.Unlock()
	cur := r.packs.Swap(nil)
	if cur == nil {
		return err
	}
	for _, p := range cur.packs {
		p.f.Close()
	}
	r.cache.Clear()
	if ferr := r.flock.Close(); err == nil {
		err = ferr
	}
	return err
}

// closeJournal checkpoints and closes the journal after the Commits in
// flight; later ones fail with ErrClosed.
func (r *Repo) closeJournal() error {
	r.journalMu.Lock()
	defer r.journalMu.Unlock()
	j := r.journal.Load()
	if r.journalClosed || j == nil {
		r.journalClosed = true
		return nil
	}
	r.journalClosed = true
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	j.inflight.Lock()
	defer j.inflight.Unlock()
	err := r.checkpointLocked(j)
	if cerr := j.close(); err == nil {
		err = cerr
	}
	return err
}
