package gitrepo

import (
	"fmt"
	"io"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

func entry(name string, mode filemode.FileMode) object.TreeEntry {
	return object.TreeEntry{Name: name, Mode: mode, Hash: testHash(len(name))}
}

func goGitEncode(t testing.TB, entries []object.TreeEntry) []byte {
	o := &plumbing.MemoryObject{}
	require.NoError(t, (&object.Tree{Entries: entries}).Encode(o))
	rd, _ := o.Reader()
	b, _ := io.ReadAll(rd)
	return b
}

func TestAppendTreeMatchesGoGit(t *testing.T) {
	for name, entries := range map[string][]object.TreeEntry{
		"empty": nil,
		"modes": {entry("exe", filemode.Executable), entry("file", filemode.Regular),
			entry("link", filemode.Symlink), entry("mod", filemode.Submodule), entry("sub", filemode.Dir)},
		// A directory sorts as if its name ended in '/' (0x2f): after
		// "a-b" (0x2d) and "a.b" (0x2e), before "a0" (0x30).
		"dir order": {entry("a-b", filemode.Regular), entry("a.b", filemode.Regular),
			entry("a", filemode.Dir), entry("a0", filemode.Regular)},
		"file order": {entry("a", filemode.Regular), entry("a-b", filemode.Regular), entry("a.b", filemode.Regular)},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := AppendTree(nil, entries)
			require.NoError(t, err)
			require.Equal(t, string(goGitEncode(t, entries)), string(got))
		})
	}
}

func TestAppendTreeRejectsWhatFsckRejects(t *testing.T) {
	for name, entries := range map[string][]object.TreeEntry{
		"unsorted":           {entry("b", filemode.Regular), entry("a", filemode.Regular)},
		"duplicate":          {entry("a", filemode.Regular), entry("a", filemode.Regular)},
		"file and dir":       {entry("a", filemode.Regular), entry("a.b", filemode.Regular), entry("a", filemode.Dir)},
		"empty name":         {entry("", filemode.Regular)},
		"dot":                {entry(".", filemode.Dir)},
		"dotdot":             {entry("..", filemode.Dir)},
		"dotgit":             {entry(".GIT", filemode.Dir)},
		"slash":              {entry("a/b", filemode.Regular)},
		"nul":                {entry("a\x00", filemode.Regular)},
		"group writable":     {entry("a", filemode.FileMode(0o100664))},
		"zero hash":          {{Name: "a", Mode: filemode.Regular}},
		"deprecated mode":    {entry("a", filemode.Deprecated)},
		"dir sorted as file": {entry("a", filemode.Dir), entry("a-b", filemode.Regular)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := AppendTree(nil, entries)
			require.ErrorIs(t, err, ErrBadTree)
		})
	}
}

// Trees we write pass git fsck --strict, including tricky orders.
func TestTreesPassFsck(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	sub, err := b.AddTree(&object.Tree{Entries: []object.TreeEntry{{Name: "x", Mode: filemode.Regular, Hash: b.AddBlob([]byte("x"))}}})
	require.NoError(t, err)
	blob := b.AddBlob([]byte("y"))
	root, err := b.AddTree(&object.Tree{Entries: []object.TreeEntry{
		{Name: "a-b", Mode: filemode.Regular, Hash: blob}, {Name: "a.b", Mode: filemode.Executable, Hash: blob},
		{Name: "a", Mode: filemode.Dir, Hash: sub}, {Name: "a0", Mode: filemode.Symlink, Hash: blob},
	}})
	require.NoError(t, err)
	c, err := b.AddCommit(&object.Commit{Author: testSig, Committer: testSig, Message: "t\n", TreeHash: root})
	require.NoError(t, err)
	require.NoError(t, r.Write(b))
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, c, plumbing.ZeroHash))
	fsck(t, r.Dir())
	require.Equal(t, "x", git(t, r.Dir(), "cat-file", "-p", "main:a/x"))
}

// siblings is a directory of n files as the store writes them.
func siblings(n int) []object.TreeEntry {
	es := make([]object.TreeEntry, n)
	for i := range es {
		es[i] = object.TreeEntry{Name: fmt.Sprintf("configmap-%05d.json", i), Mode: filemode.Regular, Hash: testHash(i)}
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Name < es[j].Name })
	return es
}

func BenchmarkTreeEncode(b *testing.B) {
	es := siblings(1000)
	b.Run("AppendTree", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = AppendTree(buf[:0], es)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("go-git", func(b *testing.B) {
		tree := &object.Tree{Entries: es}
		for b.Loop() {
			o := &plumbing.MemoryObject{}
			if err := tree.Encode(o); err != nil {
				b.Fatal(err)
			}
		}
	})
}
