package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// twoCommits writes two commits (not referenced by any ref).
func twoCommits(t *testing.T, r *Repo) (plumbing.Hash, plumbing.Hash) {
	b := r.NewBatch()
	c1 := addCommit(t, b, plumbing.ZeroHash, map[string]string{"a": "1"}, "one\n")
	c2 := addCommit(t, b, c1, map[string]string{"a": "2"}, "two\n")
	require.NoError(t, r.Write(b))
	return c1, c2
}

// swapCases are the compare-and-swap outcomes that CompareAndSwapRef and
// Commit must both give: the ref is at current, the caller expects old and
// asks for c1.
var swapCases = []struct {
	name    string
	current int // 0: missing, 1: c1, 2: c2
	old     int
	want    error
	after   int
}{
	{"create", 0, 0, nil, 1},
	{"create over existing", 2, 0, ErrRefChanged, 2},
	{"update", 2, 2, nil, 1},
	{"update from wrong value", 2, 1, ErrRefChanged, 2},
	{"update missing", 0, 2, ErrRefChanged, 0},
}

func TestCompareAndSwapRef(t *testing.T) {
	const name = plumbing.ReferenceName("refs/heads/team/a")
	for _, tc := range swapCases {
		t.Run(tc.name, func(t *testing.T) {
			r := openTemp(t)
			c1, c2 := twoCommits(t, r)
			hashes := []plumbing.Hash{plumbing.ZeroHash, c1, c2}
			if tc.current != 0 {
				require.NoError(t, r.CompareAndSwapRef(name, hashes[tc.current], plumbing.ZeroHash))
			}
			err := r.CompareAndSwapRef(name, c1, hashes[tc.old])
			require.ErrorIs(t, err, tc.want)
			got, err := r.Ref(name)
			require.NoError(t, err)
			require.Equal(t, hashes[tc.after], got)
			_, err = os.Stat(r.refPath(name) + ".lock")
			require.True(t, os.IsNotExist(err), "lock released")
			if tc.after != 0 {
				require.Equal(t, hashes[tc.after].String(), git(t, r.Dir(), "rev-parse", string(name)))
			}
		})
	}
}

func TestCompareAndSwapRefHonoursGitLock(t *testing.T) {
	r := openTemp(t)
	c1, _ := twoCommits(t, r)
	lock := r.refPath(plumbing.Main) + ".lock"
	require.NoError(t, os.WriteFile(lock, nil, 0o644)) // as git update-ref holds it
	require.ErrorIs(t, r.CompareAndSwapRef(plumbing.Main, c1, plumbing.ZeroHash), ErrRefLocked)
	_, err := os.Stat(lock)
	require.NoError(t, err, "someone else's lock is left alone")
	require.NoError(t, os.Remove(lock))
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, c1, plumbing.ZeroHash))

	// And git sees our lock as held.
	require.NoError(t, os.WriteFile(lock, nil, 0o644))
	out, err := gitCmd(r.Dir(), "update-ref", "refs/heads/main", c1.String()).CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "File exists")
}

func TestRefReadsPackedRefs(t *testing.T) {
	r := openTemp(t)
	c1, c2 := twoCommits(t, r)
	require.NoError(t, r.CompareAndSwapRef("refs/heads/packed", c1, plumbing.ZeroHash))
	require.NoError(t, r.CompareAndSwapRef("refs/tags/v1", c2, plumbing.ZeroHash))
	git(t, r.Dir(), "pack-refs", "--all")
	_, err := os.Stat(r.refPath("refs/heads/packed"))
	require.True(t, os.IsNotExist(err), "git packed it")

	got, err := r.Ref("refs/heads/packed")
	require.NoError(t, err)
	require.Equal(t, c1, got)
	branches, err := r.Branches()
	require.NoError(t, err)
	require.Equal(t, []string{"packed"}, branches)

	// A CAS checks the packed value and writes a loose ref over it.
	require.ErrorIs(t, r.CompareAndSwapRef("refs/heads/packed", c2, plumbing.ZeroHash), ErrRefChanged)
	require.NoError(t, r.CompareAndSwapRef("refs/heads/packed", c2, c1))
	require.Equal(t, c2.String(), git(t, r.Dir(), "rev-parse", "packed"))
}

func TestDeleteRef(t *testing.T) {
	for _, tc := range []struct {
		name          string
		packed, loose bool
	}{
		{"loose", false, true},
		{"packed", true, false},
		{"packed and loose", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := openTemp(t)
			c1, c2 := twoCommits(t, r)
			name := plumbing.ReferenceName("refs/heads/team/x")
			require.NoError(t, r.CompareAndSwapRef("refs/heads/other", c1, plumbing.ZeroHash))
			require.NoError(t, r.CompareAndSwapRef(name, c1, plumbing.ZeroHash))
			if tc.packed {
				git(t, r.Dir(), "pack-refs", "--all")
			}
			cur := c1
			if tc.loose && tc.packed {
				require.NoError(t, r.CompareAndSwapRef(name, c2, c1))
				cur = c2
			}
			require.ErrorIs(t, r.DeleteRef(name, wrong(cur, c1, c2)), ErrRefChanged)
			require.NoError(t, r.DeleteRef(name, cur))
			got, err := r.Ref(name)
			require.NoError(t, err)
			require.True(t, got.IsZero())
			branches, err := r.Branches()
			require.NoError(t, err)
			require.Equal(t, []string{"other"}, branches)
			_, err = os.Stat(filepath.Join(r.Dir(), "refs/heads/team"))
			require.True(t, os.IsNotExist(err), "emptied directory removed")
			require.NoError(t, r.CompareAndSwapRef("refs/heads/team", c1, plumbing.ZeroHash), "the name is free again")
			fsck(t, r.Dir())
		})
	}
}

// wrong returns the one of a, b that is not cur.
func wrong(cur, a, b plumbing.Hash) plumbing.Hash {
	if cur == a {
		return b
	}
	return a
}

func TestRefFollowsHEADAndRejectsBadNames(t *testing.T) {
	r := openTemp(t)
	c1, _ := twoCommits(t, r)
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, c1, plumbing.ZeroHash))
	got, err := r.Ref(plumbing.HEAD)
	require.NoError(t, err)
	require.Equal(t, c1, got)

	for _, name := range []plumbing.ReferenceName{"refs/heads/../../config", "refs/heads/a.lock", "config",
		"refs/heads/a..b", "refs/heads/", "/etc/passwd", "refs/heads/a b"} {
		_, err := r.Ref(name)
		require.ErrorIs(t, err, ErrInvalidRef, name)
		require.ErrorIs(t, r.CompareAndSwapRef(name, c1, plumbing.ZeroHash), ErrInvalidRef, name)
	}
	require.ErrorIs(t, r.CompareAndSwapRef(plumbing.Main, plumbing.ZeroHash, c1), ErrInvalidRef)
}

func TestRefReportsCorruptFile(t *testing.T) {
	r := openTemp(t)
	require.NoError(t, os.WriteFile(r.refPath(plumbing.Main), []byte(""), 0o644))
	_, err := r.Ref(plumbing.Main)
	require.ErrorIs(t, err, ErrCorruptRef)
}

func TestBranchesListsLooseAndPacked(t *testing.T) {
	r := openTemp(t)
	c1, _ := twoCommits(t, r)
	for _, n := range []string{"b", "a/x", "a/y"} {
		require.NoError(t, r.CompareAndSwapRef(plumbing.NewBranchReferenceName(n), c1, plumbing.ZeroHash))
	}
	git(t, r.Dir(), "pack-refs", "--all")
	require.NoError(t, r.CompareAndSwapRef("refs/heads/c", c1, plumbing.ZeroHash))
	require.NoError(t, r.CompareAndSwapRef("refs/tags/t", c1, plumbing.ZeroHash))
	require.NoError(t, os.WriteFile(r.refPath("refs/heads/d")+".lock", nil, 0o644))
	got, err := r.Branches()
	require.NoError(t, err)
	require.Equal(t, []string{"a/x", "a/y", "b", "c"}, got)
}

// Goroutines and git update-ref processes race to move main from the same
// old value: exactly one wins, because all take <ref>.lock exclusively.
func TestCompareAndSwapRefRacesWithGit(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	base := addCommit(t, b, plumbing.ZeroHash, map[string]string{"a": "0"}, "base\n")
	var next []plumbing.Hash
	for i := range 8 {
		next = append(next, addCommit(t, b, base, map[string]string{"a": fmt.Sprint(i + 1)}, "next\n"))
	}
	require.NoError(t, r.Write(b))
	for round := range 5 {
		require.NoError(t, os.RemoveAll(r.refPath(plumbing.Main)))
		require.NoError(t, r.CompareAndSwapRef(plumbing.Main, base, plumbing.ZeroHash))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i, h := range next {
			if i%2 == 0 {
				wg.Go(func() {
					err := r.CompareAndSwapRef(plumbing.Main, h, base)
					if err == nil {
						wins.Add(1)
					} else if !errors.Is(err, ErrRefChanged) && !errors.Is(err, ErrRefLocked) {
						t.Error(err)
					}
				})
				continue
			}
			wg.Go(func() {
				if gitCmd(r.Dir(), "update-ref", "refs/heads/main", h.String(), base.String()).Run() == nil {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		require.Equal(t, int32(1), wins.Load(), "round %d", round)
		got, err := r.Ref(plumbing.Main)
		require.NoError(t, err)
		require.Contains(t, next, got)
	}
}
