package gitrepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

func openTemp(t testing.TB) *Repo {
	t.Helper()
	r, err := Open(filepath.Join(t.TempDir(), "repo.git"))
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// git runs the real git CLI in dir, isolated from the user's config.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...).CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=t@example.com")
	return cmd
}

func fsck(t testing.TB, dir string) {
	t.Helper()
	git(t, dir, "fsck", "--strict", "--no-dangling", "--full")
}

var testSig = object.Signature{Name: "Heaven", Email: "heaven@example.com", When: time.Unix(1700000000, 0).UTC()}

// addCommit adds a commit whose tree is files (name → content, flat).
func addCommit(t testing.TB, b *Batch, parent plumbing.Hash, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	tree := &object.Tree{}
	for name, content := range files {
		tree.Entries = append(tree.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: b.AddBlob([]byte(content))})
	}
	sortEntries(tree.Entries)
	th, err := b.AddTree(tree)
	require.NoError(t, err)
	c := &object.Commit{Author: testSig, Committer: testSig, Message: msg, TreeHash: th}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	h, err := b.AddCommit(c)
	require.NoError(t, err)
	return h
}

func sortEntries(es []object.TreeEntry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && compareEntries(&es[j-1], &es[j]) > 0; j-- {
			es[j-1], es[j] = es[j], es[j-1]
		}
	}
}

// commitFiles writes one commit on branch main and moves the ref.
func commitFiles(t testing.TB, r *Repo, files map[string]string, msg string) plumbing.Hash {
	t.Helper()
	parent, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	b := r.NewBatch()
	h := addCommit(t, b, parent, files, msg)
	require.NoError(t, r.Write(b))
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, h, parent))
	return h
}

func packCount(t testing.TB, r *Repo) int {
	t.Helper()
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	return len(sums)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, d time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, d, time.Millisecond, append([]any{"timed out: " + msg}, args...)...)
}

func files(n int, prefix string) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("%s%04d.json", prefix, i)] = fmt.Sprintf(`{"n": %d, "p": %q}`, i, prefix)
	}
	return m
}
