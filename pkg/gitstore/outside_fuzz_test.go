package gitstore

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"

	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// FuzzOutsideCommits commits random file trees onto a branch from outside
// (as a push would) and checks that picking them up never panics, never
// stops the branch's writer, and lists only files that are in the tree.
//
//	go test -fuzz FuzzOutsideCommits ./pkg/gitstore/
func FuzzOutsideCommits(f *testing.F) {
	f.Add([]byte("core/cm/default/a.json\x00{\"name\":\"a\"}\x01core/cm/default/b.json\x00{\"name\":"))
	f.Add([]byte("core/cm/x.yaml\x00name: x\n\x01core/cm/x\x00plain\x01core/cm/default/%zz.json\x00{}"))
	f.Add([]byte("a.json\x00[]\x01core/cm/default/c.raw\x00\xff\xfe\x01core/cm/default/c.json\x00{\"name\":\"c\"}"))
	f.Add([]byte("core/cm/default/d.json\x00\x02core/cm/default\x00file where a directory was"))

	// A worker's log goes to a pipe that the fuzzing engine reads only
	// now and then; a log line per input would fill it and stall the
	// worker.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	f.Cleanup(func() { klog.LogToStderr(true) })
	fz := newOutsideFuzz(f)
	f.Fuzz(fz.run)
}

// outsideFuzz is the state the fuzz target keeps between inputs: one
// repository, a new branch per input.
type outsideFuzz struct {
	r *Repository
	n int
}

func newOutsideFuzz(tb testing.TB) *outsideFuzz {
	dir := filepath.Join(tb.TempDir(), "heavens.git")
	r, err := Open(dir, Options{PollInterval: time.Hour, ReadFile: readObjectFile})
	require.NoError(tb, err)
	tb.Cleanup(func() { r.Close() })
	return &outsideFuzz{r: r}
}

func (fz *outsideFuzz) run(t *testing.T, data []byte) {
	r, ctx := fz.r, context.Background()
	fz.n++
	b, err := r.Branch(ctx, fmt.Sprintf("fuzz-%d", fz.n))
	require.NoError(t, err)
	defer r.CloseBranch(b.name)
	put(t, b, "/core/cm/default/seed", `{"name":"seed"}`)

	// Two commits from outside: the random tree, then the same tree
	// with one file removed (a fix, or a deletion).
	files := fuzzFiles(data)
	head := b.Head()
	for round := 0; round < 2; round++ {
		commit, err := commitOutside(r.git, b.ref, head, files)
		if err != nil {
			t.Skipf("not a tree git accepts: %v", err) // the generator's fault, not the store's
		}
		// A write finds the ref moved, picks the commit up, and lands
		// on top of it.
		_, err = b.Put(ctx, "/core/cm/default/w", []byte(fmt.Sprintf(`{"name":"w","round":%d}`, round)))
		require.NoError(t, err)
		require.NoError(t, isAncestor(r, commit, b.Head()), "the outside commit is in the branch's history")
		head = b.Head()
		inTree := treeFiles(t, r.git, head)
		for _, p := range b.Problems() {
			require.True(t, inTree[p.Path], "problem %s names a file that is not in the head tree", p)
		}
		for p := range files {
			delete(files, p)
			break
		}
	}
}

// fuzzFiles splits data into files: "\x01"-separated "path\x00content"
// records; a "\x02" marks the record before it as executable. Paths are
// cleaned into names git accepts.
func fuzzFiles(data []byte) map[string]string {
	files := map[string]string{}
	for _, rec := range strings.Split(string(data), "\x01") {
		path, content, _ := strings.Cut(rec, "\x00")
		var parts []string
		for _, p := range strings.Split(path, "/") {
			p = strings.Map(func(r rune) rune {
				if r < 0x20 || r == 0x7f || r == '\\' {
					return '_'
				}
				return r
			}, p)
			if p == "" || p == "." || p == ".." || strings.EqualFold(p, ".git") {
				continue
			}
			parts = append(parts, p)
		}
		if len(parts) > 0 && len(parts) < 8 {
			files[strings.Join(parts, "/")] = content
		}
	}
	return files
}

// commitOutside writes files as a tree and a commit on parent, and moves
// ref to it as git would on a push.
func commitOutside(repo *gitrepo.Repo, ref plumbing.ReferenceName, parent plumbing.Hash, files map[string]string) (plumbing.Hash, error) {
	wb := repo.NewBatch()
	root, err := addTree(wb, files)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "someone", Email: "someone@example.com", When: time.Unix(0, 0)}
	c := &object.Commit{Author: sig, Committer: sig, Message: "pushed\n", TreeHash: root, ParentHashes: []plumbing.Hash{parent}}
	h, err := wb.AddCommit(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := repo.Write(wb); err != nil {
		return plumbing.ZeroHash, err
	}
	return h, repo.CompareAndSwapRef(ref, h, parent)
}

// addTree adds the tree of files (path → content) and its subtrees.
func addTree(wb *gitrepo.Batch, files map[string]string) (plumbing.Hash, error) {
	blobs := map[string]string{}
	dirs := map[string]map[string]string{}
	for path, content := range files {
		name, rest, nested := strings.Cut(path, "/")
		if nested {
			if dirs[name] == nil {
				dirs[name] = map[string]string{}
			}
			dirs[name][rest] = content
		} else {
			blobs[name] = content
		}
	}
	var entries []object.TreeEntry
	for name, content := range blobs {
		if _, clash := dirs[name]; clash {
			continue
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: wb.AddBlob([]byte(content))})
	}
	for name, sub := range dirs {
		h, err := addTree(wb, sub)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	sort.Slice(entries, func(i, j int) bool { return gitName(entries[i]) < gitName(entries[j]) })
	return wb.AddTree(&object.Tree{Entries: entries})
}

func isAncestor(r *Repository, a, b plumbing.Hash) error {
	ok, err := r.IsAncestor(a, b)
	if err == nil && !ok {
		err = fmt.Errorf("%s is not an ancestor of %s", a, b)
	}
	return err
}

// treeFiles lists every file path of commit's tree.
func treeFiles(t *testing.T, repo *gitrepo.Repo, commit plumbing.Hash) map[string]bool {
	c, err := object.GetCommit(repo.Storer(), commit)
	require.NoError(t, err)
	out := map[string]bool{}
	var walk func(dir string, h plumbing.Hash)
	walk = func(dir string, h plumbing.Hash) {
		entries, err := readTree(repo.Storer(), h)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Mode == filemode.Dir {
				walk(dir+e.Name+"/", e.Hash)
			} else {
				out[dir+e.Name] = true
			}
		}
	}
	walk("", c.TreeHash)
	return out
}
