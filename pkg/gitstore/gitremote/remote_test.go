//go:build unix

package gitremote

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// git runs the git CLI without the machine's configuration.
func git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func bareRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	git(t, "init", "-q", "--bare", dir)
	return dir
}

func openRepo(t *testing.T) *gitrepo.Repo {
	t.Helper()
	r, err := gitrepo.Open(filepath.Join(t.TempDir(), "heavens.git"))
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

// commit writes a commit of files (path → content, one directory level
// at most) on top of parents and moves ref to it.
func commit(t *testing.T, r *gitrepo.Repo, ref string, files map[string]string, parents ...plumbing.Hash) plumbing.Hash {
	t.Helper()
	b := r.NewBatch()
	dirs := map[string]map[string]string{}
	for p, content := range files {
		dir, name := "", p
		if i := strings.LastIndex(p, "/"); i >= 0 {
			dir, name = p[:i], p[i+1:]
		}
		if dirs[dir] == nil {
			dirs[dir] = map[string]string{}
		}
		dirs[dir][name] = content
	}
	root := &object.Tree{}
	for dir, fs := range dirs {
		t := &object.Tree{}
		for name, content := range fs {
			t.Entries = append(t.Entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: b.AddBlob([]byte(content))})
		}
		sortEntries(t)
		if dir == "" {
			root.Entries = append(root.Entries, t.Entries...)
			continue
		}
		h, err := b.AddTree(t)
		if err != nil {
			panic(err)
		}
		root.Entries = append(root.Entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	}
	sortEntries(root)
	tree, err := b.AddTree(root)
	require.NoError(t, err)
	sig := object.Signature{Name: "t", Email: "t@localhost", When: time.Now()}
	h, err := b.AddCommit(&object.Commit{Author: sig, Committer: sig, Message: "c", TreeHash: tree, ParentHashes: parents})
	require.NoError(t, err)
	name := plumbing.NewBranchReferenceName(ref)
	old, err := r.Ref(name)
	require.NoError(t, err)
	require.NoError(t, r.Commit(b, name, h, old))
	return h
}

func sortEntries(t *object.Tree) {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
}

func readFile(t *testing.T, r *gitrepo.Repo, c plumbing.Hash, path string) string {
	t.Helper()
	co, err := object.GetCommit(r.Storer(), c)
	require.NoError(t, err)
	f, err := co.File(path)
	require.NoError(t, err)
	s, err := f.Contents()
	require.NoError(t, err)
	return s
}

// gitDaemon serves the bare repositories below base over git:// with
// pushes allowed, until the test ends; it returns the base URL.
func gitDaemon(t *testing.T, base string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	cmd := exec.Command("git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1",
		fmt.Sprintf("--port=%d", port), "--base-path="+base, base)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // git-daemon runs as git's child
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "git daemon does not listen")
	return "git://" + addr + "/"
}

func TestFetchAndPushRoundTrip(t *testing.T) {
	for name, urlOf := range map[string]func(t *testing.T, dir string) string{
		"git daemon": func(t *testing.T, dir string) string { return gitDaemon(t, filepath.Dir(dir)) + filepath.Base(dir) },
		"file":       func(t *testing.T, dir string) string { return "file://" + dir },
		"path":       func(t *testing.T, dir string) string { return dir }, // go-git's file transport too
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			remoteDir := bareRemote(t)
			url := urlOf(t, remoteDir)
			a, b := openRepo(t), openRepo(t)
			tracking := plumbing.ReferenceName("refs/remotes/h/x")

			got, err := Fetch(ctx, b, url, "x", tracking)
			require.NoError(t, err, "an empty remote")
			assert.True(t, got.IsZero())

			c1 := commit(t, a, "x", map[string]string{"core/a.json": "a1", "core/b.json": "b1", "top": "t"})
			require.NoError(t, Push(ctx, a, url, "x", c1, plumbing.ZeroHash))
			assert.Equal(t, c1.String(), git(t, "--git-dir", remoteDir, "rev-parse", "refs/heads/x"))
			require.NoError(t, Push(ctx, a, url, "x", c1, plumbing.ZeroHash), "there already")

			got, err = Fetch(ctx, b, url, "missing", tracking)
			require.NoError(t, err)
			assert.True(t, got.IsZero(), "a branch the remote does not have")

			got, err = Fetch(ctx, b, url, "x", tracking)
			require.NoError(t, err)
			assert.Equal(t, c1, got)
			tip, err := b.Ref(tracking)
			require.NoError(t, err)
			assert.Equal(t, c1, tip)
			assert.Equal(t, "a1", readFile(t, b, c1, "core/a.json"))

			c2 := commit(t, a, "x", map[string]string{"core/a.json": "a2", "core/b.json": "b1", "top": "t"}, c1)
			require.ErrorIs(t, Push(ctx, a, url, "x", c2, plumbing.ZeroHash), ErrRejected, "the branch exists now")
			require.NoError(t, Push(ctx, a, url, "x", c2, c1))
			git(t, "--git-dir", remoteDir, "fsck", "--no-dangling")
			got, err = Fetch(ctx, b, url, "x", tracking, plumbing.NewBranchReferenceName("x"))
			require.NoError(t, err)
			assert.Equal(t, c2, got)
			assert.Equal(t, "a2", readFile(t, b, c2, "core/a.json"))

			// b merges a commit of its own with the remote's and pushes.
			b1 := commit(t, b, "x", map[string]string{"core/a.json": "a1", "core/c.json": "c-from-b"}, c1)
			m := commit(t, b, "x", map[string]string{"core/a.json": "a2", "core/b.json": "b1", "core/c.json": "c-from-b", "top": "t"}, b1, c2)
			require.ErrorIs(t, Push(ctx, b, url, "x", m, c1), ErrRejected, "the remote is at c2")
			require.NoError(t, Push(ctx, b, url, "x", m, c2))
			git(t, "--git-dir", remoteDir, "fsck", "--no-dangling")
			got, err = Fetch(ctx, a, url, "x", tracking)
			require.NoError(t, err)
			assert.Equal(t, m, got)
			assert.Equal(t, "c-from-b", readFile(t, a, m, "core/c.json"))
		})
	}
}

func TestCLIFetchAndPush(t *testing.T) {
	ctx := context.Background()
	remoteDir := bareRemote(t)
	a, b := openRepo(t), openRepo(t)
	tracking := plumbing.ReferenceName("refs/remotes/h/x")
	c1 := commit(t, a, "x", map[string]string{"core/a.json": "a1"})
	require.NoError(t, cliPush(ctx, a, remoteDir, "x", c1, plumbing.ZeroHash))
	c2 := commit(t, a, "x", map[string]string{"core/a.json": "a2"}, c1)
	require.ErrorIs(t, cliPush(ctx, a, remoteDir, "x", c2, plumbing.ZeroHash), ErrRejected)
	require.NoError(t, cliPush(ctx, a, remoteDir, "x", c2, c1))
	got, err := cliFetch(ctx, b, remoteDir, "missing", tracking)
	require.NoError(t, err)
	assert.True(t, got.IsZero())
	got, err = cliFetch(ctx, b, remoteDir, "x", tracking)
	require.NoError(t, err)
	assert.Equal(t, c2, got)
	assert.Equal(t, "a2", readFile(t, b, c2, "core/a.json"))
}

func TestUnreachableRemoteIsAnError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "git://" + l.Addr().String() + "/gone.git"
	require.NoError(t, l.Close())
	r := openRepo(t)
	c := commit(t, r, "x", map[string]string{"a": "1"})
	_, err = Fetch(context.Background(), r, url, "x", "refs/remotes/h/x")
	require.Error(t, err)
	err = Push(context.Background(), r, url, "x", c, plumbing.ZeroHash)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrRejected)
}

// newObjects sends what `git rev-list --objects head ^old` lists.
func TestNewObjectsAreWhatGitListsForThePush(t *testing.T) {
	r := openRepo(t)
	base := commit(t, r, "x", map[string]string{"core/a.json": "a0", "core/b.json": "b0", "apps/d.json": "d0"})
	old := commit(t, r, "x", map[string]string{"core/a.json": "a1", "core/b.json": "b0", "apps/d.json": "d0"}, base)
	side := commit(t, r, "y", map[string]string{"core/a.json": "a0", "core/b.json": "b2", "apps/d.json": "d0", "new/e.json": "e"}, base)
	head := commit(t, r, "y", map[string]string{"core/a.json": "a1", "core/b.json": "b2", "apps/d.json": "d0", "new/e.json": "e"}, side, old)

	require.NoError(t, r.Flush()) // for git rev-list
	got, err := newObjects(r.Storer(), head, old)
	require.NoError(t, err)
	want := strings.Fields(git(t, "--git-dir", r.Dir(), "rev-list", "--objects", "--no-object-names", head.String(), "^"+old.String()))
	var gotS []string
	for _, h := range got {
		gotS = append(gotS, h.String())
	}
	assert.ElementsMatch(t, want, gotS)

	all, err := newObjects(r.Storer(), head, plumbing.ZeroHash)
	require.NoError(t, err)
	want = strings.Fields(git(t, "--git-dir", r.Dir(), "rev-list", "--objects", "--no-object-names", head.String()))
	assert.Len(t, all, len(want), "a remote without the branch gets everything")
}

// A host that drops packets does not hold a fetch beyond its context.
func TestFetchEndsWithItsContext(t *testing.T) {
	r := openRepo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Fetch(ctx, r, "git://10.255.255.1/x.git", "x", "refs/remotes/h/x") // not routed
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
}
