package gitrepo

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// randomDir returns n entries in git order: files and directories whose
// names make git's "directory sorts as name/" rule matter.
func randomDir(rnd *rand.Rand, n int) []object.TreeEntry {
	var es []object.TreeEntry
	seen := map[string]bool{}
	for len(es) < n {
		name := fmt.Sprintf("cm-%d", rnd.IntN(4*n))
		if rnd.IntN(4) == 0 {
			name += ".json"
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		e := object.TreeEntry{Name: name, Mode: filemode.Regular}
		if rnd.IntN(5) == 0 {
			e.Mode = filemode.Dir
		}
		randomHash(rnd, &e.Hash)
		es = append(es, e)
	}
	sortEntries(es)
	return es
}

func randomHash(rnd *rand.Rand, h *plumbing.Hash) {
	for i := range h {
		h[i] = byte(rnd.Uint32())
	}
}

// mutate changes, removes and adds k entries.
func mutate(rnd *rand.Rand, es []object.TreeEntry, k int) []object.TreeEntry {
	es = append([]object.TreeEntry(nil), es...)
	for range k {
		if len(es) == 0 {
			break
		}
		switch i := rnd.IntN(len(es)); rnd.IntN(3) {
		case 0:
			randomHash(rnd, &es[i].Hash)
		case 1:
			es = append(es[:i], es[i+1:]...)
		default:
			e := object.TreeEntry{Name: fmt.Sprintf("new-%d", rnd.Uint32()), Mode: filemode.Regular}
			randomHash(rnd, &e.Hash)
			es = append(es, e)
			sortEntries(es)
		}
	}
	return es
}

func TestAppendTreeDeltaRebuildsTarget(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 10, 1000, 5000} {
		for _, k := range []int{0, 1, 3, 20} {
			base := randomDir(rnd, n)
			target := mutate(rnd, base, k)
			if len(target) == 0 {
				continue
			}
			bd, err := AppendTree(nil, base)
			require.NoError(t, err)
			td, err := AppendTree(nil, target)
			require.NoError(t, err)
			d := appendTreeDelta([]byte("x"), bd, td, 2*len(td)+64)
			require.NotNil(t, d, "%d entries, %d changes", n, k)
			require.Equal(t, byte('x'), d[0])
			got, err := packfile.PatchDelta(bd, d[1:])
			require.NoError(t, err)
			require.True(t, bytes.Equal(td, got), "%d entries, %d changes", n, k)
			if n >= 1000 {
				require.Less(t, len(d), 80*(k+1)+16, "%d entries, %d changes: delta of %d bytes", n, k, len(d))
			}
		}
	}
	// Over the limit, or not trees: nil.
	bd, _ := AppendTree(nil, randomDir(rnd, 100))
	td, _ := AppendTree(nil, randomDir(rnd, 100))
	require.Nil(t, appendTreeDelta(nil, bd, td, len(td)/4))
	require.Nil(t, appendTreeDelta(nil, []byte("garbage"), td, len(td)))
	require.Nil(t, appendTreeDelta(nil, bd, []byte("100644 truncated\x00abc"), 100))
}

// TestTreeVersionsAcrossCommits: a directory rewritten by every Commit is
// stored as a delta against a base copied into each pack; what is read
// back, by us and by git, is every version; Maintain merges the copies.
func TestTreeVersionsAcrossCommits(t *testing.T) {
	r := openTemp(t)
	rnd := rand.New(rand.NewPCG(5, 6))
	dir := randomDir(rnd, 1000)
	for i := range dir {
		dir[i].Mode = filemode.Regular // entries must name blobs that exist for fsck
	}
	sortEntries(dir)
	var parent, prevTree plumbing.Hash
	var trees []plumbing.Hash
	whole, deltas := 0, 0
	for i := range 40 {
		b := r.NewBatch()
		k := 1 + rnd.IntN(12)
		for range k {
			j := rnd.IntN(len(dir))
			dir[j].Hash = b.AddBlob([]byte(fmt.Sprintf("value %d %d", i, j)))
		}
		if i == 0 {
			for j := range dir {
				dir[j].Hash = b.AddBlob([]byte("first " + dir[j].Name))
			}
		}
		th, err := b.AddTreeVersion(&object.Tree{Entries: dir}, prevTree)
		require.NoError(t, err)
		root, err := b.AddTree(&object.Tree{Entries: []object.TreeEntry{{Name: "dir", Mode: filemode.Dir, Hash: th}}})
		require.NoError(t, err)
		c := &object.Commit{Author: testSig, Committer: testSig, Message: fmt.Sprintf("c%d\n", i), TreeHash: root}
		if !parent.IsZero() {
			c.ParentHashes = []plumbing.Hash{parent}
		}
		ch, err := b.AddCommit(c)
		require.NoError(t, err)
		before := r.versions.baseOf(prevTree)
		require.NoError(t, r.Commit(b, plumbing.Main, ch, parent))
		if before != nil && r.versions.baseOf(th) == before {
			deltas++
		} else {
			whole++
		}
		parent, prevTree = ch, th
		trees = append(trees, th)
		if i%7 == 6 {
			require.NoError(t, r.Maintain())
		}
	}
	require.Greater(t, deltas, 20, "versions stored as deltas")
	require.Greater(t, whole, 1, "bases renewed as the directory drifts")
	r.cache.Clear()
	for _, h := range trees {
		tr, err := object.GetTree(r.Storer(), h)
		require.NoError(t, err)
		require.Len(t, tr.Entries, 1000)
	}
	fsck(t, r.Dir())
	out := git(t, r.Dir(), "log", "--format=%s", "main")
	require.Equal(t, 40, len(strings.Split(out, "\n")))
	require.Len(t, strings.Split(git(t, r.Dir(), "ls-tree", "--name-only", "main:dir"), "\n"), 1000)
	require.NoError(t, r.Close())
	// After a restart (no bases in memory) and a merge of everything.
	r2, err := Open(r.Dir())
	require.NoError(t, err)
	defer r2.Close()
	for range 3 {
		require.NoError(t, r2.Maintain())
	}
	for _, h := range trees {
		_, err := object.GetTree(r2.Storer(), h)
		require.NoError(t, err)
	}
	git(t, r.Dir(), "repack", "-adq")
	fsck(t, r.Dir())
}
