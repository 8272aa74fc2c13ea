package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// Readers never fail while one goroutine writes batches and another runs
// Maintain (which merges and deletes packs all the time here); run with
// -race.
func TestReadersDuringWritesAndMaintain(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 2
	r.cache = cache.NewObjectLRU(0) // every read goes to the packs
	var (
		mu      sync.Mutex
		commits []plumbing.Hash // readable from now on
		done    atomic.Bool
		wg      sync.WaitGroup
		reads   atomic.Int64
		merges  atomic.Int64
	)
	published := func() []plumbing.Hash {
		mu.Lock()
		defer mu.Unlock()
		return commits
	}
	// Built here: require may only stop the test's own goroutine.
	var batches []*Batch
	var heads []plumbing.Hash
	parent := plumbing.ZeroHash
	for i := range 60 {
		b := r.NewBatch()
		parent = addCommit(t, b, parent, map[string]string{"n.txt": fmt.Sprint(i), "const.txt": "c"}, fmt.Sprintf("%d\n", i))
		batches, heads = append(batches, b), append(heads, parent)
	}
	write := func(i int) error {
		if err := r.Write(batches[i]); err != nil {
			return err
		}
		old := plumbing.ZeroHash
		if i > 0 {
			old = heads[i-1]
		}
		if err := r.CompareAndSwapRef(plumbing.Main, heads[i], old); err != nil {
			return err
		}
		mu.Lock()
		commits = append(commits, heads[i])
		mu.Unlock()
		return nil
	}
	require.NoError(t, write(0))

	wg.Go(func() {
		defer done.Store(true)
		for i := 1; i < len(batches); i++ {
			if err := write(i); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Go(func() {
		for !done.Load() {
			before, err := listPacks(r.packDir)
			if err == nil {
				err = r.Maintain()
			}
			after, lerr := listPacks(r.packDir)
			if err == nil {
				err = lerr
			}
			if err != nil {
				t.Error(err)
				return
			}
			if len(after) < len(before) {
				merges.Add(1)
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for !done.Load() {
				cs := published()
				i := rand.IntN(len(cs))
				if err := checkCommit(r, cs[i], i); err != nil {
					t.Error(err)
					return
				}
				if _, err := r.Storer().EncodedObject(plumbing.AnyObject, testHash(i)); err != plumbing.ErrObjectNotFound {
					t.Errorf("missing object: got %v", err) // a miss rescans the packs
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Wait()
	require.Positive(t, merges.Load(), "Maintain merged while readers read")
	require.Positive(t, reads.Load())
	t.Logf("%d reads, %d merges", reads.Load(), merges.Load())
	fsck(t, r.Dir())
}

func checkCommit(r *Repo, h plumbing.Hash, i int) error {
	c, err := object.GetCommit(r.Storer(), h)
	if err != nil {
		return fmt.Errorf("commit %d: %w", i, err)
	}
	f, err := c.File("n.txt")
	if err != nil {
		return fmt.Errorf("commit %d: %w", i, err)
	}
	s, err := f.Contents()
	if err != nil {
		return fmt.Errorf("commit %d: %w", i, err)
	}
	if s != fmt.Sprint(i) {
		return fmt.Errorf("commit %d: n.txt = %q", i, s)
	}
	return nil
}
