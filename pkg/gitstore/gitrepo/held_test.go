package gitrepo

import (
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// commitOn commits files on top of branch's current value.
func commitOn(t testing.TB, r *Repo, branch string, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	name := plumbing.NewBranchReferenceName(branch)
	parent, err := r.Ref(name)
	require.NoError(t, err)
	b := r.NewBatch()
	h := addCommit(t, b, parent, files, msg)
	require.NoError(t, r.Commit(b, name, h, parent))
	return h
}

func TestFlushWritesHeldCommitsAsOnePack(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Hour, time.Hour // flushed below
	last := map[string]plumbing.Hash{}
	for i := range 4 {
		for n, br := range []string{"main", "team/a", "b"} {
			last[br] = commitOn(t, r, br, files(5, fmt.Sprint(n, "-", i, "-")), fmt.Sprint(br, i, "\n"))
		}
	}
	names, err := r.Branches()
	require.NoError(t, err)
	require.Equal(t, []string{"b", "main", "team/a"}, names, "held branches are listed before they are on disk")
	for n, br := range []string{"main", "team/a", "b"} {
		got, err := r.Ref(plumbing.NewBranchReferenceName(br))
		require.NoError(t, err)
		require.Equal(t, last[br], got)
		require.Contains(t, readFile(t, r, got, fmt.Sprint(n, "-3-0004.json")), `"n": 4`)
	}
	require.Zero(t, packCount(t, r), "held in memory")

	require.NoError(t, r.Flush())
	require.Equal(t, 1, packCount(t, r), "twelve commits, one pack")
	for br, h := range last {
		require.Equal(t, h.String(), git(t, r.Dir(), "rev-parse", "refs/heads/"+br))
		require.Equal(t, "4", git(t, r.Dir(), "rev-list", "--count", "refs/heads/"+br))
		_, err := os.Stat(r.refPath(plumbing.NewBranchReferenceName(br)) + ".lock")
		require.True(t, os.IsNotExist(err), "lock released")
	}
	fsck(t, r.Dir())
	require.NoError(t, r.Flush(), "nothing held: nothing to do")
	require.Equal(t, 1, packCount(t, r))
}

func TestFlushFollowsTheLastCommitOnceIdle(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = 10*time.Millisecond, time.Hour
	h := commitOn(t, r, "main", files(3, "x"), "m\n")
	require.Eventually(t, func() bool { return onDisk(r, plumbing.Main) == h }, 10*time.Second, 5*time.Millisecond, "the idle timer flushed")
	require.Equal(t, 1, packCount(t, r))
}

func TestSteadyCommitsAreFlushedAfterFlushDelay(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Hour, 20*time.Millisecond
	first := commitOn(t, r, "main", files(3, "x"), "m\n")
	n := 1
	require.Eventually(t, func() bool {
		commitOn(t, r, "main", files(3, fmt.Sprint("x", n)), "m\n") // never idle
		n++
		return !onDisk(r, plumbing.Main).IsZero()
	}, 10*time.Second, time.Millisecond, "a Commit past flushDelay flushed")
	require.NotEqual(t, first, onDisk(r, plumbing.Main), "commits after the first, together")
}

// onDisk returns the value of name's loose file, zero if there is none.
func onDisk(r *Repo, name plumbing.ReferenceName) plumbing.Hash {
	data, err := os.ReadFile(r.refPath(name))
	if err != nil {
		return plumbing.ZeroHash
	}
	v, err := parseRef(data)
	if err != nil {
		return plumbing.ZeroHash
	}
	return v.hash
}

func TestHeldCommitsSurviveKill(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Hour, time.Hour // never flushed
	dir := r.Dir()
	base := commitFiles(t, r, files(5, "base-"), "base\n") // durable, on disk
	var main, side plumbing.Hash
	for i := range 5 {
		main = commitOn(t, r, "main", files(5, fmt.Sprint("m", i, "-")), "m\n")
		side = commitOn(t, r, "side", files(5, fmt.Sprint("s", i, "-")), "s\n")
	}
	abandon(t, r)
	// Everything held was lost with the process, but the journal.
	data, err := os.ReadFile(r.refPath(plumbing.Main))
	require.NoError(t, err)
	require.Equal(t, base.String()+"\n", string(data))

	r, err = Open(dir)
	require.NoError(t, err)
	defer r.Close()
	for name, want := range map[plumbing.ReferenceName]plumbing.Hash{plumbing.Main: main, "refs/heads/side": side} {
		got, err := r.Ref(name)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	require.Contains(t, readFile(t, r, main, "m4-0004.json"), `"n": 4`)
	require.Contains(t, readFile(t, r, side, "s4-0001.json"), `"n": 1`)
	require.Equal(t, "6", git(t, dir, "rev-list", "--count", "main"))
	fsck(t, dir)
}

func TestCommitOfAClaimedRefIsLocked(t *testing.T) {
	r := openTemp(t)
	c1, _ := twoCommits(t, r)
	require.NoError(t, r.held.claim(plumbing.Main)) // as a Commit in progress
	require.ErrorIs(t, r.Commit(r.NewBatch(), plumbing.Main, c1, plumbing.ZeroHash), ErrRefLocked)
	r.held.unclaim(plumbing.Main)
	require.NoError(t, r.Commit(r.NewBatch(), plumbing.Main, c1, plumbing.ZeroHash))
}

func TestRefUpdatesFlushHeldCommits(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Hour, time.Hour
	c1, c2 := twoCommits(t, r)
	require.NoError(t, r.Commit(r.NewBatch(), plumbing.Main, c1, plumbing.ZeroHash))
	// The held ref's lock is ours; CompareAndSwapRef flushes, then takes it.
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, c2, c1))
	require.Equal(t, c2.String(), git(t, r.Dir(), "rev-parse", "main"))

	require.NoError(t, r.Commit(r.NewBatch(), "refs/heads/x", c1, plumbing.ZeroHash))
	require.NoError(t, r.DeleteRef("refs/heads/x", c1))
	got, err := r.Ref("refs/heads/x")
	require.NoError(t, err)
	require.True(t, got.IsZero())
}

func TestHeldRefsConflictWithNewRefs(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Hour, time.Hour
	c1, _ := twoCommits(t, r)
	require.NoError(t, r.Commit(r.NewBatch(), "refs/heads/team", c1, plumbing.ZeroHash))
	require.ErrorIs(t, r.Commit(r.NewBatch(), "refs/heads/team/a", c1, plumbing.ZeroHash), ErrRefConflict)
	require.NoError(t, r.Commit(r.NewBatch(), "refs/heads/x/a", c1, plumbing.ZeroHash))
	require.ErrorIs(t, r.Commit(r.NewBatch(), "refs/heads/x", c1, plumbing.ZeroHash), ErrRefConflict)
	require.NoError(t, r.Flush())
	fsck(t, r.Dir())
}

// Readers of held commits never miss an object while flushes replace
// held packs by files and Maintain merges those: run with -race.
func TestReadersDuringFlushes(t *testing.T) {
	r := openTemp(t)
	r.held.idle, r.held.delay = time.Millisecond, 5*time.Millisecond
	r.maxPacks = 3
	// Built here: require may only stop the test's own goroutine. Both
	// branches get the same commits, so a pack is often held while a
	// flush writes a file of the same name (which once closed it).
	const writers, commitsEach = 2, 40
	var batches [writers][]*Batch
	var heads [writers][]plumbing.Hash
	for w := range writers {
		parent := plumbing.ZeroHash
		for i := range commitsEach {
			b := r.NewBatch()
			parent = addCommit(t, b, parent, map[string]string{"n.txt": fmt.Sprint(i), "const.txt": "c"}, fmt.Sprintf("%d\n", i))
			batches[w], heads[w] = append(batches[w], b), append(heads[w], parent)
		}
	}
	var (
		mu      sync.Mutex
		commits []plumbing.Hash // readable from now on
		wg      sync.WaitGroup
		done    = make(chan struct{})
	)
	for w := range writers {
		wg.Go(func() {
			name := plumbing.NewBranchReferenceName(fmt.Sprint("w", w))
			old := plumbing.ZeroHash
			for i, h := range heads[w] {
				if !assert.NoError(t, r.Commit(batches[w][i], name, h, old)) || !assert.NoError(t, r.Maintain()) {
					return
				}
				old = h
				mu.Lock()
				commits = append(commits, h)
				mu.Unlock()
			}
		})
	}
	var reads int
	readers := sync.WaitGroup{}
	readers.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			mu.Lock()
			cs := append([]plumbing.Hash(nil), commits...)
			mu.Unlock()
			for _, h := range cs {
				r.cache.Clear() // read the packs, not the cache
				if _, err := r.object(h); !assert.NoError(t, err) {
					return
				}
				reads++
			}
		}
	})
	wg.Wait()
	close(done)
	readers.Wait()
	require.Positive(t, reads)
	require.NoError(t, r.Flush())
	require.Equal(t, fmt.Sprint(commitsEach), git(t, r.Dir(), "rev-list", "--count", "w0"))
	require.Equal(t, fmt.Sprint(commitsEach), git(t, r.Dir(), "rev-list", "--count", "w1"))
	fsck(t, r.Dir())
}
