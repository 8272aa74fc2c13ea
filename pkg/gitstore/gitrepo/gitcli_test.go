package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

// readFile reads path from the tree of commit h through Storer.
func readFile(t *testing.T, r *Repo, h plumbing.Hash, path string) string {
	t.Helper()
	c, err := object.GetCommit(r.Storer(), h)
	require.NoError(t, err)
	f, err := c.File(path)
	require.NoError(t, err)
	s, err := f.Contents()
	require.NoError(t, err)
	return s
}

// pushCommits clones r, makes n commits changing big.txt (so that git
// deltifies them) and pushes them.
func pushCommits(t *testing.T, r *Repo, work string, n int) plumbing.Hash {
	t.Helper()
	if _, err := os.Stat(work); err != nil {
		git(t, t.TempDir(), "clone", "-q", r.Dir(), work)
	} else {
		git(t, work, "pull", "-q", "--ff-only")
	}
	for i := range n {
		var sb strings.Builder
		for j := range 2000 {
			fmt.Fprintf(&sb, "line %d of a large file, edit %d\n", j, j%97+i*(j%3))
		}
		require.NoError(t, os.WriteFile(filepath.Join(work, "big.txt"), []byte(sb.String()), 0o644))
		git(t, work, "add", "big.txt")
		git(t, work, "commit", "-q", "-m", fmt.Sprintf("git %d", i))
	}
	git(t, work, "push", "-q", "origin", "HEAD:main")
	return plumbing.NewHash(git(t, work, "rev-parse", "HEAD"))
}

func TestGitCloneLogAndPushRoundTrip(t *testing.T) {
	for name, unpackLimit := range map[string]string{
		"push arrives as loose objects": "1000",
		"push arrives as a pack":        "1",
	} {
		t.Run(name, func(t *testing.T) {
			r := openTemp(t)
			git(t, r.Dir(), "config", "receive.unpackLimit", unpackLimit)
			ours := commitFiles(t, r, map[string]string{"a.json": "{}"}, "ours\n")
			work := filepath.Join(t.TempDir(), "work")

			theirs := pushCommits(t, r, work, 3)
			require.Equal(t, "ours", git(t, work, "log", "--format=%s", ours.String()))
			got, err := r.Ref(plumbing.Main)
			require.NoError(t, err)
			require.Equal(t, theirs, got, "Ref sees git's push")
			require.Contains(t, readFile(t, r, theirs, "big.txt"), "line 1999")
			require.Equal(t, "{}", readFile(t, r, theirs, "a.json"))

			// We build on their commit; git reads ours.
			next := commitFiles(t, r, map[string]string{"a.json": `{"b":1}`}, "ours again\n")
			git(t, work, "pull", "-q", "--ff-only")
			require.Equal(t, next.String(), git(t, work, "rev-parse", "HEAD"))
			fsck(t, r.Dir())
		})
	}
}

// After git gc, objects live in git's deltified pack and our packs are
// gone; reads through Storer still succeed.
func TestReadsAfterGitGC(t *testing.T) {
	r := openTemp(t)
	git(t, r.Dir(), "config", "receive.unpackLimit", "1")
	var written []plumbing.Hash
	for i := range 3 {
		written = append(written, commitFiles(t, r, files(50, fmt.Sprintf("v%d-", i)), "ours\n"))
	}
	theirs := pushCommits(t, r, filepath.Join(t.TempDir(), "work"), 4)
	git(t, r.Dir(), "gc", "-q", "--prune=now", "--aggressive")
	require.Equal(t, 1, packCount(t, r))
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	require.Contains(t, git(t, r.Dir(), "verify-pack", "-v", packPath(r.packDir, sums[0], ".idx")),
		"chain length = ", "precondition: git deltified big.txt")

	for i, h := range written {
		require.Contains(t, readFile(t, r, h, fmt.Sprintf("v%d-0049.json", i)), `"n": 49`)
	}
	c, err := object.GetCommit(r.Storer(), theirs)
	require.NoError(t, err)
	for range 4 { // git's commits, deltified against each other
		require.Contains(t, readFile(t, r, c.Hash, "big.txt"), "line 1999")
		c, err = c.Parent(0)
		require.NoError(t, err)
	}
	require.NoError(t, r.Close())

	// A fresh Open reads git's deltified pack only.
	r, err = Open(r.Dir())
	require.NoError(t, err)
	defer r.Close()
	require.Contains(t, readFile(t, r, theirs, "big.txt"), "line 1999")
	it, err := r.Storer().IterEncodedObjects(plumbing.CommitObject)
	require.NoError(t, err)
	n := 0
	require.NoError(t, it.ForEach(func(plumbing.EncodedObject) error { n++; return nil }))
	require.Equal(t, 7, n)
}

// git gc deletes an index it finds without its pack. A gc run while one
// of our packs has its final name and its index not yet must leave every
// object readable: with the index named first, gc took it for garbage,
// the pack came without one, and a commit was lost (TestChaos).
func TestGitGCBetweenAPacksRenames(t *testing.T) {
	for name, write := range map[string]func(r *Repo, b *Batch, h, parent plumbing.Hash) error{
		"Write": func(r *Repo, b *Batch, h, parent plumbing.Hash) error {
			if err := r.Write(b); err != nil {
				return err
			}
			return r.CompareAndSwapRef(plumbing.Main, h, parent)
		},
		"Commit": func(r *Repo, b *Batch, h, parent plumbing.Hash) error {
			if err := r.Commit(b, plumbing.Main, h, parent); err != nil {
				return err
			}
			return r.Flush() // the renames
		},
	} {
		t.Run(name, func(t *testing.T) {
			r := openTemp(t)
			parent := commitFiles(t, r, files(20, "a-"), "first\n")
			gcs := 0
			betweenPackRenames = func() {
				gcs++
				// Commit holds the ref's lock meanwhile, which pack-refs
				// would stop at; the step that deletes garbage comes later.
				git(t, r.Dir(), "-c", "gc.packRefs=false", "gc", "--quiet")
			}
			t.Cleanup(func() { betweenPackRenames = nil })
			b := r.NewBatch()
			h := addCommit(t, b, parent, files(20, "b-"), "second\n")
			require.NoError(t, write(r, b, h, parent))
			betweenPackRenames = nil
			require.Equal(t, 1, gcs, "precondition: git gc ran between the renames")

			require.NoError(t, r.Close())
			require.Equal(t, "second", git(t, r.Dir(), "log", "-1", "--format=%s", h.String()))
			require.Contains(t, git(t, r.Dir(), "show", h.String()+":b-0019.json"), `"n": 19`)
			fsck(t, r.Dir())
		})
	}
}
