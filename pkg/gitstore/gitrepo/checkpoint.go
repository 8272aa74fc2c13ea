package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// checkpoint makes durable what the journal's current epoch describes
// (packs, indexes and refs written without fsync, and their directories)
// and then starts a new epoch, so the journal's space can be reused. It
// flushes held commits first (held.go) and waits for Commits between
// their check and their put.
func (r *Repo) checkpoint(j *journal) error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	j.inflight.Lock()
	defer j.inflight.Unlock()
	return r.checkpointLocked(j)
}

// checkpointLocked is checkpoint for a caller holding r.flushMu and
// j.inflight.
func (r *Repo) checkpointLocked(j *journal) error {
	if err := r.flushLocked(j); err != nil {
		return err
	}
	packs, refs, seq := j.pending()
	if seq == 0 {
		return nil // no record since the last checkpoint
	}
	var files []string
	dirs := map[string]struct{}{}
	for _, p := range packs {
		files = append(files, packPath(r.packDir, p, ".pack"), packPath(r.packDir, p, ".idx"))
		dirs[r.packDir] = struct{}{}
	}
	for _, name := range refs {
		path := r.refPath(name)
		files = append(files, path)
		dirs[filepath.Dir(path)] = struct{}{}
	}
	if err := syncAll(files); err != nil {
		return err
	}
	dirList := make([]string, 0, len(dirs))
	for d := range dirs {
		dirList = append(dirList, d)
	}
	if err := syncAll(dirList); err != nil {
		return err
	}
	return j.startEpoch()
}

// checkpointIfJournaled checkpoints when a record of the current epoch
// moves name: a ref update that bypasses the journal (CompareAndSwapRef,
// DeleteRef) could otherwise set a value that recovery takes for one the
// journal moved on from, and undo it. The caller holds name's lock, so no
// Commit of name can journal meanwhile.
func (r *Repo) checkpointIfJournaled(name plumbing.ReferenceName) error {
	if j := r.journal.Load(); j != nil && j.names(name) {
		return r.checkpoint(j)
	}
	return nil
}

// defaultCheckpointAge bounds how long a record stays in the journal when
// Maintain runs: the window in which a crash makes recovery take a ref
// moved back by someone else to a value of ours for a lost move of ours
// (README.md), and the work of a replay.
const defaultCheckpointAge = 5 * time.Second

// checkpointIfDue checkpoints after a merge (journaled packs just merged
// are durable in the merged pack and need not be fsynced; the rest is,
// so no record outlives its pack and recovery never writes merged packs
// again), or when the oldest record is older than r.checkpointAge.
func (r *Repo) checkpointIfDue(merged bool) error {
	j := r.journal.Load()
	if j == nil {
		return nil
	}
	if first, ok := j.oldest(); ok && (merged || time.Since(first) >= r.checkpointAge) {
		return r.checkpoint(j)
	}
	return nil
}

// syncAll fsyncs files (or directories) concurrently: a disk serves
// several flushes at about the cost of one. Missing ones are skipped: a
// pack merged by Maintain or removed by git gc has its objects durable
// elsewhere; a ref deleted or packed by git is git's to make durable.
func syncAll(paths []string) error {
	const workers = 8
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan string)
	)
	for range min(workers, len(paths)) {
		wg.Go(func() {
			for path := range next {
				if err := syncPath(path); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for _, p := range paths {
		next <- p
	}
	close(next)
	wg.Wait()
	return first
}

func syncPath(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
