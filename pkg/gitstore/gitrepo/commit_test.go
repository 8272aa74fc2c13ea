package gitrepo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// commitJournaled makes one commit on branch main with Commit.
func commitJournaled(t testing.TB, r *Repo, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	parent, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	b := r.NewBatch()
	h := addCommit(t, b, parent, files, msg)
	require.NoError(t, r.Commit(b, plumbing.Main, h, parent))
	return h
}

// abandon drops r as kill -9 would: files closed, nothing checkpointed,
// what was written left in the page cache. Open may then run again.
func abandon(t testing.TB, r *Repo) {
	t.Helper()
	// Held commits are lost with the process, as kill -9 loses them: the
	// journal has them. A flush in flight ends first, and a later one
	// (the idle timer) finds the repository closed.
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.journalMu.Lock()
	r.journalClosed = true
	if j := r.journal.Load(); j != nil {
		require.NoError(t, j.close())
	}
	r.journalMu.Unlock()
	r.packsMu.Lock()
	for _, p := range r.packs.Swap(nil).packs {
		p.f.Close()
	}
	r.packsMu.Unlock()
	require.NoError(t, r.flock.Close())
}

// epoch returns the journal's generation (one per checkpoint) and the
// records of its current epoch.
func epoch(t testing.TB, r *Repo) (uint64, uint64) {
	t.Helper()
	j := r.journal.Load()
	require.NotNil(t, j, "journal created")
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.gen, j.seq
}

func TestCommitIsReadableByStorerAndGit(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Hour, time.Hour // flushed below
	c1 := commitJournaled(t, r, map[string]string{"a.json": `{"a":1}`, "b.json": "b"}, "first\n")
	c2 := commitJournaled(t, r, map[string]string{"a.json": `{"a":2}`, "b.json": "b"}, "second\n")

	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, c2, got)
	c, err := object.GetCommit(r.Storer(), c2)
	require.NoError(t, err)
	require.Equal(t, []plumbing.Hash{c1}, c.ParentHashes)
	require.Equal(t, `{"a":2}`, readFile(t, r, c2, "a.json"))
	require.Equal(t, `{"a":1}`, readFile(t, r, c1, "a.json"))
	_, seq := epoch(t, r)
	require.Equal(t, uint64(2), seq, "two records, no checkpoint yet")

	// Held: readable here at once, not by git yet.
	require.Zero(t, packCount(t, r))
	_, err = os.Stat(r.refPath(plumbing.Main))
	require.True(t, os.IsNotExist(err), "main not on disk yet")

	// Flushed: git reads what is not fsynced yet, as any reader of the
	// page cache; both commits are in one pack.
	require.NoError(t, r.Flush())
	require.Equal(t, c2.String(), git(t, r.Dir(), "rev-parse", "main"))
	require.Equal(t, "second\nfirst", git(t, r.Dir(), "log", "--format=%s", "main"))
	require.Equal(t, `{"a":2}`, git(t, r.Dir(), "cat-file", "-p", "main:a.json"))
	fsck(t, r.Dir())
	require.Equal(t, 1, packCount(t, r))
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	for _, s := range sums {
		git(t, r.Dir(), "verify-pack", packPath(r.packDir, s, ".idx"))
	}
}

func TestCommitComparesAndSwaps(t *testing.T) {
	const name = plumbing.ReferenceName("refs/heads/team/a")
	for _, tc := range swapCases {
		t.Run(tc.name, func(t *testing.T) {
			r := openTemp(t)
			c1, c2 := twoCommits(t, r)
			hashes := []plumbing.Hash{plumbing.ZeroHash, c1, c2}
			if tc.current != 0 {
				require.NoError(t, r.CompareAndSwapRef(name, hashes[tc.current], plumbing.ZeroHash))
			}
			packs := packCount(t, r)
			r.held.idle, r.held.delay = time.Hour, time.Hour // flushed below
			b := r.NewBatch()
			b.AddBlob([]byte("new " + tc.name))
			err := r.Commit(b, name, c1, hashes[tc.old])
			require.ErrorIs(t, err, tc.want)
			got, err := r.Ref(name)
			require.NoError(t, err)
			require.Equal(t, hashes[tc.after], got)
			_, err = os.Stat(r.refPath(name) + ".lock")
			_, seq := epoch(t, r)
			if tc.want != nil {
				require.True(t, os.IsNotExist(err), "lock released")
				require.Equal(t, packs, packCount(t, r), "a failed compare writes nothing")
				require.Zero(t, seq, "nor journals anything")
				return
			}
			require.NoError(t, err, "the lock is kept while the ref is held")
			require.Equal(t, packs, packCount(t, r), "the pack is held in memory")
			require.NoError(t, r.Flush())
			_, err = os.Stat(r.refPath(name) + ".lock")
			require.True(t, os.IsNotExist(err), "lock released by the flush")
			require.Equal(t, packs+1, packCount(t, r))
			require.Equal(t, uint64(1), seq)
			require.Equal(t, c1.String(), git(t, r.Dir(), "rev-parse", string(name)))
		})
	}
}

func TestCommitHonoursGitLock(t *testing.T) {
	r := openTemp(t)
	c1, _ := twoCommits(t, r)
	lock := r.refPath(plumbing.Main) + ".lock"
	require.NoError(t, os.WriteFile(lock, nil, 0o644)) // as git update-ref holds it
	require.ErrorIs(t, r.Commit(r.NewBatch(), plumbing.Main, c1, plumbing.ZeroHash), ErrRefLocked)
	_, err := os.Stat(lock)
	require.NoError(t, err, "someone else's lock is left alone")
	require.NoError(t, os.Remove(lock))
	require.NoError(t, r.Commit(r.NewBatch(), plumbing.Main, c1, plumbing.ZeroHash), "objects stored: a record without pack")
	require.ErrorIs(t, r.Commit(r.NewBatch(), plumbing.Main, plumbing.ZeroHash, c1), ErrInvalidRef)
	require.ErrorIs(t, r.Commit(r.NewBatch(), "refs/heads/a..b", c1, plumbing.ZeroHash), ErrInvalidRef)
}

// A record larger than the whole journal: the pack is written durably,
// the record holds the ref move only.
func TestCommitLargerThanJournal(t *testing.T) {
	r := openTemp(t)
	r.journalMax = 16 << 10
	big := make([]byte, 64<<10)
	rand.NewChaCha8([32]byte{1}).Read(big) // does not compress
	b := r.NewBatch()
	h := addCommit(t, b, plumbing.ZeroHash, map[string]string{"big": string(big)}, "big\n")
	require.NoError(t, r.Commit(b, plumbing.Main, h, plumbing.ZeroHash))
	require.Equal(t, string(big), readFile(t, r, h, "big"))
	j := r.journal.Load()
	recs, err := readRecords(j)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Empty(t, recs[0].pack.entries, "no pack in the record")
	require.Equal(t, int64(16<<10), j.size)

	dir := r.Dir()
	abandon(t, r)
	r, err = Open(dir)
	require.NoError(t, err)
	defer r.Close()
	require.Equal(t, string(big), readFile(t, r, h, "big"))
	fsck(t, dir)
}

// readRecords reads the current epoch of j as recovery would.
func readRecords(j *journal) ([]*record, error) {
	c := &journal{f: j.f}
	c.reset()
	return c.load()
}

// Moving a journaled ref the durable way checkpoints first, so that
// recovery cannot take the value set for one the journal moved on from.
func TestCompareAndSwapRefBackAfterCommit(t *testing.T) {
	r := openTemp(t)
	a := commitJournaled(t, r, map[string]string{"x": "1"}, "a\n")
	b := commitJournaled(t, r, map[string]string{"x": "2"}, "b\n")
	gen, _ := epoch(t, r)
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, a, b))
	after, seq := epoch(t, r)
	require.Equal(t, gen+1, after, "checkpointed")
	require.Zero(t, seq)
	require.NoError(t, r.CompareAndSwapRef("refs/heads/other", a, plumbing.ZeroHash))
	again, _ := epoch(t, r)
	require.Equal(t, after, again, "refs the journal does not name need no checkpoint")

	dir := r.Dir()
	abandon(t, r)
	r, err := Open(dir)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, a, got)
}

// Commits on several branches run concurrently and share fdatasyncs,
// while Maintain merges (and checkpoints) and the journal wraps around.
func TestConcurrentCommits(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 4
	r.journalMax = journalDataStart + 8<<10
	const branches, commits = 4, 25
	heads := make([]plumbing.Hash, branches)
	// Built here: require may only stop the test's own goroutine.
	batches := make([][]*Batch, branches)
	hashes := make([][]plumbing.Hash, branches)
	for i := range branches {
		parent := plumbing.ZeroHash
		for n := range commits {
			b := r.NewBatch()
			parent = addCommit(t, b, parent, map[string]string{"n.txt": fmt.Sprint(n), "b.txt": fmt.Sprint(i)}, fmt.Sprintf("%d/%d\n", i, n))
			batches[i], hashes[i] = append(batches[i], b), append(hashes[i], parent)
		}
	}
	var wg, writers sync.WaitGroup
	var done atomic.Bool
	for i := range branches {
		writers.Go(func() {
			name := plumbing.NewBranchReferenceName(fmt.Sprint("b", i))
			old := plumbing.ZeroHash
			for n, b := range batches[i] {
				if err := r.Commit(b, name, hashes[i][n], old); err != nil {
					t.Error(err)
					return
				}
				old = hashes[i][n]
			}
			heads[i] = old
		})
	}
	var maintained int
	wg.Go(func() {
		for !done.Load() {
			if err := r.Maintain(); err != nil {
				t.Error(err)
				return
			}
			maintained++
		}
	})
	writers.Wait()
	done.Store(true)
	wg.Wait()
	gen, _ := epoch(t, r)
	require.Greater(t, gen, uint64(5), "the journal wrapped around")
	t.Logf("%d checkpoints, %d Maintain calls", gen-1, maintained)
	check := func(r *Repo) {
		for i, h := range heads {
			require.Equal(t, hashes[i][commits-1], h)
			got, err := r.Ref(plumbing.NewBranchReferenceName(fmt.Sprint("b", i)))
			require.NoError(t, err)
			require.Equal(t, h, got)
			require.NoError(t, checkCommit(r, h, commits-1))
		}
		fsck(t, r.Dir())
	}
	check(r)
	dir := r.Dir()
	abandon(t, r)
	r, err := Open(dir)
	require.NoError(t, err)
	defer r.Close()
	check(r)
}

func TestCommitAfterCloseFails(t *testing.T) {
	r := openTemp(t)
	commitJournaled(t, r, map[string]string{"a": "1"}, "m\n")
	require.NoError(t, r.Close())
	err := r.Commit(r.NewBatch(), plumbing.Main, testHash(1), plumbing.ZeroHash)
	require.True(t, errors.Is(err, ErrClosed), "got %v", err)
	recs, err := readRecordsAt(r.Dir())
	require.NoError(t, err)
	require.Empty(t, recs, "Close checkpointed")
}

// readRecordsAt reads the journal of the closed repository dir.
func readRecordsAt(dir string) ([]*record, error) {
	j, recs, err := openJournal(dir, defaultJournalMax)
	if j != nil {
		j.close()
	}
	return recs, err
}
