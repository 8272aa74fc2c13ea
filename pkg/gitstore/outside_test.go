package gitstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// readObjectFile stands in for heaven-server's reader of pushed files: JSON
// or YAML objects, whose "name" must match the key's last component.
func readObjectFile(key string, content []byte, ext string) ([]byte, error) {
	var js []byte
	var err error
	switch ext {
	case extJSON:
		js, err = DecodeValue(content, ext)
	case extYAML:
		js, err = yaml.YAMLToJSON(content)
	default:
		return nil, errors.New("not JSON or YAML")
	}
	if err != nil {
		return nil, err
	}
	var obj struct{ Name string }
	if err := yaml.Unmarshal(js, &obj); err != nil {
		return nil, err
	}
	if want := key[strings.LastIndex(key, "/")+1:]; obj.Name != want {
		return nil, errors.New("name " + obj.Name + " does not match the path's " + want)
	}
	return js, nil
}

func openOutsideBranch(t *testing.T) (*Branch, string, *problemLog) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "heavens.git")
	seen := &problemLog{}
	return reopenOutside(t, dir, seen), dir, seen
}

// reopenOutside opens branch team-a of dir with the object file reader.
func reopenOutside(t *testing.T, dir string, seen *problemLog) *Branch {
	t.Helper()
	r, err := Open(dir, Options{PollInterval: 10 * time.Millisecond, ReadFile: readObjectFile, OnProblems: seen.add})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	return b
}

// problemLog records what OnProblems was told.
type problemLog struct {
	mu    sync.Mutex
	calls [][]FileProblem
}

func (l *problemLog) add(_ string, p []FileProblem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls = append(l.calls, p)
}

func (l *problemLog) last() (calls int, last []FileProblem) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return 0, nil
	}
	return len(l.calls), l.calls[len(l.calls)-1]
}

// clone makes a work tree of branch, for commits pushed from outside.
func clone(t *testing.T, dir, branch string) string {
	t.Helper()
	wd := filepath.Join(t.TempDir(), "w")
	git(t, filepath.Dir(wd), "clone", "-q", "--branch", branch, dir, wd)
	return wd
}

// push writes files (content "" removes the file) into work tree wd,
// commits and pushes them.
func push(t *testing.T, wd string, files map[string]string, args ...string) {
	t.Helper()
	for path, content := range files {
		p := filepath.Join(wd, filepath.FromSlash(path))
		if content == "" {
			require.NoError(t, os.Remove(p))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	git(t, wd, "add", "-A")
	git(t, wd, "commit", "-qm", "by hand")
	git(t, wd, append([]string{"push", "-q", "origin", "HEAD"}, args...)...)
}

// waitFor polls cond until it holds, or fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 10*time.Second, 10*time.Millisecond, "timed out waiting for %s", what)
}

func problemPaths(b *Branch) []string {
	var out []string
	for _, p := range b.Problems() {
		out = append(out, p.Path)
	}
	return out
}

func TestBadPushedFileNeverBlocksTheBranch(t *testing.T) {
	b, dir, seen := openOutsideBranch(t)
	put(t, b, "/core/cm/default/good", `{"name":"good","v":1}`)
	waitGitRef(t, dir, "team-a", b.Head())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := b.Watch(ctx, WatchRequest{Key: "/", End: "\x00"})
	require.NoError(t, err)

	// A truncated file for a new key and a broken edit of an existing one.
	wd := clone(t, dir, "team-a")
	push(t, wd, map[string]string{
		"core/cm/default/bad.json":  `{"name":"bad",`,
		"core/cm/default/good.json": `{"name":"good","v":`,
	})
	waitFor(t, "the problems", func() bool { return len(b.Problems()) == 2 })
	require.Equal(t, []string{"core/cm/default/bad.json", "core/cm/default/good.json"}, problemPaths(b))
	require.Nil(t, get(t, b, "/core/cm/default/bad", 0), "a file that can't be served is no key")
	require.JSONEq(t, `{"name":"good","v":1}`, string(get(t, b, "/core/cm/default/good", 0).Value), "the last good value stays")
	waitFor(t, "OnProblems told", func() bool { _, last := seen.last(); return len(last) == 2 })

	// Writes go on, also to the key whose file is broken: the write
	// replaces the file.
	put(t, b, "/core/cm/default/other", `{"name":"other"}`)
	put(t, b, "/core/cm/default/good", `{"name":"good","v":2}`)
	require.Equal(t, []string{"core/cm/default/bad.json"}, problemPaths(b))

	// A fix pushed on top serves the file and clears the problem.
	waitGitRef(t, dir, "team-a", b.Head())
	git(t, wd, "pull", "-q", "--rebase=false", "origin", "team-a")
	push(t, wd, map[string]string{"core/cm/default/bad.json": `{"name":"bad","fixed":true}`})
	waitFor(t, "the fix", func() bool { return get(t, b, "/core/cm/default/bad", 0) != nil })
	require.Empty(t, b.Problems())
	waitFor(t, "OnProblems told", func() bool { _, last := seen.last(); return len(last) == 0 })

	// The watch saw every served change in order and never ended.
	var keys []string
	for len(keys) < 3 {
		select {
		case resp := <-w.Responses():
			require.False(t, resp.Canceled)
			for _, ev := range resp.Events {
				keys = append(keys, string(ev.KV.Key))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("watch stalled after %v", keys)
		}
	}
	require.Equal(t, []string{"/core/cm/default/other", "/core/cm/default/good", "/core/cm/default/bad"}, keys)
	git(t, dir, "fsck", "--strict")
}

func TestPushedYAMLIsServedAndRebuiltTheSame(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, b := openTeamA(t, dir)
	put(t, b, "/core/cm/default/a", `{"name":"a"}`)
	waitGitRef(t, dir, "team-a", b.Head())
	wd := clone(t, dir, "team-a")
	// Someone edits the JSON file into YAML, and adds a second object as
	// YAML and one whose name does not match its path.
	require.NoError(t, os.Remove(filepath.Join(wd, "core/cm/default/a.json")))
	push(t, wd, map[string]string{
		"core/cm/default/a.yaml":     "name: a\nedited: true\n",
		"core/cm/default/b.yaml":     "name: b\n",
		"core/cm/default/wrong.yaml": "name: right\n",
	})
	waitFor(t, "the push", func() bool { return get(t, b, "/core/cm/default/b", 0) != nil })
	a := get(t, b, "/core/cm/default/a", 0)
	require.JSONEq(t, `{"name":"a","edited":true}`, string(a.Value))
	require.Equal(t, int64(2), a.Version)
	require.Equal(t, []string{"core/cm/default/wrong.yaml"}, problemPaths(b))
	rev := b.Revision()

	// A write to a key pushed as YAML goes back to JSON in one file.
	put(t, b, "/core/cm/default/b", `{"name":"b","v":2}`)
	waitGitRef(t, dir, "team-a", b.Head())
	files := git(t, dir, "ls-tree", "-r", "--name-only", "team-a")
	require.Contains(t, files, "core/cm/default/b.json")
	require.NotContains(t, files, "core/cm/default/b.yaml")

	// Reopened, the branch comes to the same values, revisions and problems.
	require.NoError(t, r.Close())
	reopened := reopenOutside(t, dir, &problemLog{})
	require.Equal(t, b.Revision(), reopened.Revision())
	require.Greater(t, reopened.Revision(), rev)
	a2 := get(t, reopened, "/core/cm/default/a", 0)
	require.Equal(t, a.Value, a2.Value)
	require.Equal(t, a.ModRevision, a2.ModRevision)
	require.Equal(t, []string{"core/cm/default/wrong.yaml"}, problemPaths(reopened))
}

func TestForcePushKeepsLastGoodValuesAcrossRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, b := openTeamA(t, dir)
	put(t, b, "/core/cm/default/a", `{"name":"a","v":1}`)
	waitGitRef(t, dir, "team-a", b.Head())
	wd := clone(t, dir, "team-a")
	put(t, b, "/core/cm/default/a", `{"name":"a","v":2}`)

	// A force-push from an older clone: a's file is broken there.
	push(t, wd, map[string]string{"core/cm/default/a.json": `{"name":`, "core/cm/default/n.json": `{"name":"n"}`}, "--force")
	waitFor(t, "the force-push", func() bool { return get(t, b, "/core/cm/default/n", 0) != nil })
	require.JSONEq(t, `{"name":"a","v":2}`, string(get(t, b, "/core/cm/default/a", 0).Value))
	require.Equal(t, []string{"core/cm/default/a.json"}, problemPaths(b))
	rev, head := b.Revision(), b.Head()

	require.NoError(t, r.Close())
	reopened := reopenOutside(t, dir, &problemLog{})
	require.Equal(t, head, reopened.Head())
	require.Equal(t, rev, reopened.Revision())
	require.JSONEq(t, `{"name":"a","v":2}`, string(get(t, reopened, "/core/cm/default/a", 0).Value))
	require.Equal(t, []string{"core/cm/default/a.json"}, problemPaths(reopened))
	git(t, dir, "fsck", "--strict")
}

func TestUnreadableCommitBacksOffAndFailsWritesClearly(t *testing.T) {
	b, dir, _ := openOutsideBranch(t)
	put(t, b, "/core/cm/default/a", `{"name":"a"}`)
	waitGitRef(t, dir, "team-a", b.Head())
	good := b.Head()
	// A commit whose tree is not in the repository, moved in by hand
	// (git update-ref does not check connectivity).
	missingTree := strings.Repeat("ab", 20)
	broken := strings.TrimSpace(gitIn(t, dir, "tree "+missingTree+"\nparent "+good.String()+
		"\nauthor a <a@a> 0 +0000\ncommitter a <a@a> 0 +0000\n\nbroken\n",
		"hash-object", "-t", "commit", "-w", "--literally", "--stdin"))
	git(t, dir, "update-ref", "refs/heads/team-a", broken)

	began := time.Now()
	_, err := b.Put(context.Background(), "/core/cm/default/b", []byte(`{"name":"b"}`))
	require.ErrorIs(t, err, ErrUnavailable)
	require.Contains(t, err.Error(), "cannot be read")
	require.Less(t, time.Since(began), 5*time.Second, "the write fails, it does not hang")
	require.Equal(t, good, b.Head())
	// Reads go on.
	require.NotNil(t, get(t, b, "/core/cm/default/a", 0))

	// Once the branch is back on readable commits, writes resume.
	git(t, dir, "update-ref", "refs/heads/team-a", good.String())
	waitFor(t, "writes to resume", func() bool {
		_, err := b.Put(context.Background(), "/core/cm/default/b", []byte(`{"name":"b"}`))
		return err == nil
	})
}

func TestConflictingRefFailsOnlyItsBranch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r := openTestRepo(t, dir)
	ctx := context.Background()
	other, err := r.Branch(ctx, "other")
	require.NoError(t, err)
	put(t, other, "/k", "v1")
	waitGitRef(t, dir, "other", other.Head())
	// Someone makes "team/x": branch "team" can't be created any more.
	git(t, dir, "update-ref", "refs/heads/team/x", other.Head().String())
	team, err := r.Branch(ctx, "team")
	require.NoError(t, err)
	for range 3 {
		began := time.Now()
		_, err = team.Put(ctx, "/k", []byte("v"))
		require.ErrorIs(t, err, ErrRefConflict)
		require.Contains(t, err.Error(), "refs/heads/team/x")
		require.Less(t, time.Since(began), time.Second)
	}
	// Every other branch keeps writing, and the repository reopens.
	put(t, other, "/k", "v2")
	require.NoError(t, r.Close())
	r2 := openTestRepo(t, dir)
	other, err = r2.Branch(ctx, "other")
	require.NoError(t, err)
	require.Equal(t, "v2", string(get(t, other, "/k", 0).Value))
	put(t, other, "/k", "v3")

	// Once team/x is gone, team can be written.
	git(t, dir, "update-ref", "-d", "refs/heads/team/x")
	team, err = r2.Branch(ctx, "team")
	require.NoError(t, err)
	put(t, team, "/k", "v")
}

func TestPushedFileWhereADirectoryMustGo(t *testing.T) {
	b, dir, _ := openOutsideBranch(t)
	put(t, b, "/core/cm/default/a", `{"name":"a"}`)
	waitGitRef(t, dir, "team-a", b.Head())
	wd := clone(t, dir, "team-a")
	push(t, wd, map[string]string{"core/cm/ns": "not a directory\n"})
	waitFor(t, "the push", func() bool { return b.Head().String() == strings.TrimSpace(git(t, wd, "rev-parse", "HEAD")) })
	put(t, b, "/core/cm/ns/x", `{"name":"x"}`)
	waitGitRef(t, dir, "team-a", b.Head())
	git(t, dir, "fsck", "--strict")
	require.Contains(t, git(t, dir, "ls-tree", "-r", "--name-only", "team-a"), "core/cm/ns/x.json")
}

// gitIn runs git in dir with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// A person commits on an old clone, pulls (a merge with their commit
// first and the store's head second) and pushes: the store's commits since
// the clone stay in its history and revisions keep growing, whether the
// branch is open when the push lands or only opened after it.
func TestPushedPullMergeKeepsTheStoresHistory(t *testing.T) {
	for _, open := range []bool{true, false} {
		t.Run(fmt.Sprintf("open=%v", open), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "heavens.git")
			r, b := openTeamA(t, dir)
			put(t, b, "/core/cm/default/a", `{"name":"a"}`)
			waitGitRef(t, dir, "team-a", b.Head())
			wd := clone(t, dir, "team-a")
			require.NoError(t, os.WriteFile(filepath.Join(wd, "core/cm/default/p.yaml"), []byte("name: p\n"), 0o644))
			git(t, wd, "add", "-A")
			git(t, wd, "commit", "-qm", "mine")
			for i := range 5 {
				put(t, b, fmt.Sprintf("/core/cm/default/s%d", i), fmt.Sprintf(`{"name":"s%d"}`, i))
			}
			waitGitRef(t, dir, "team-a", b.Head())
			rev := b.Revision()
			git(t, wd, "pull", "-q", "--no-rebase", "--no-edit", "origin", "team-a")
			if !open {
				require.NoError(t, r.Close())
			}
			git(t, wd, "push", "-q", "origin", "team-a")
			if !open {
				r, b = openTeamA(t, dir)
			}
			waitFor(t, "the push", func() bool { return get(t, b, "/core/cm/default/p", 0) != nil })
			require.Equal(t, rev+1, b.Revision(), "the merge is one revision on top of the store's")
			for i := range 5 {
				require.NotNil(t, get(t, b, fmt.Sprintf("/core/cm/default/s%d", i), 0))
			}
			put(t, b, "/core/cm/default/after", `{"name":"after"}`)
			want := b.Revision()
			require.NoError(t, r.Close())
			r, b = openTeamA(t, dir)
			require.Equal(t, want, b.Revision(), "a rebuild comes to the same revision")
			require.Equal(t, rev, get(t, b, "/core/cm/default/s4", 0).ModRevision)
		})
	}
}

// A force-push while the store is down (or before it picked the push up)
// is answered at the next open as it would have been live: the store's
// history and revisions stay, and the pushed content is merged on top.
func TestForcePushWhileClosed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, b := openTeamA(t, dir)
	put(t, b, "/core/cm/default/a", `{"name":"a","v":1}`)
	waitGitRef(t, dir, "team-a", b.Head())
	old := b.Head()
	for i := range 5 {
		put(t, b, fmt.Sprintf("/core/cm/default/s%d", i), fmt.Sprintf(`{"name":"s%d"}`, i))
	}
	rev, head := b.Revision(), b.Head()
	require.NoError(t, r.Close())

	git(t, filepath.Dir(dir), "--git-dir", dir, "update-ref", "refs/heads/team-a", old.String())
	r, b = openTeamA(t, dir)
	waitFor(t, "the move back merged", func() bool { return b.Revision() > rev })
	require.Equal(t, rev+1, b.Revision(), "revisions go on from where they were")
	require.Nil(t, get(t, b, "/core/cm/default/s0", 0), "the content is what was pushed")
	require.NotNil(t, get(t, b, "/core/cm/default/s0", rev), "history stays")
	ok, err := r.IsAncestor(head, b.Head())
	require.NoError(t, err)
	require.True(t, ok, "the store's commits stay in the branch's history")
}

// Every commit is noted before it is acknowledged: a process killed right
// after a write leaves a record naming that write's commit.
func TestEveryCommitIsNoted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, err := Open(dir, Options{PollInterval: time.Hour, ReadFile: readObjectFile})
	require.NoError(t, err)
	defer r.Close()
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	for i := range 3 {
		rev := put(t, b, fmt.Sprintf("/core/cm/default/n%d", i), `{"name":"n"}`)
		data, err := os.ReadFile(filepath.Join(dir, "heaven", headState, "team-a"))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("%s %d", b.Head(), rev), strings.TrimSpace(string(data)))
		assert.Len(t, data, noteSize, "a note covers a longer record, whole")
	}
	// A durable record (every few seconds, and on close) replaces the file;
	// notes go on into the new one.
	require.NoError(t, b.recordHead(false))
	rev := put(t, b, "/core/cm/default/after", `{"name":"n"}`)
	data, err := os.ReadFile(filepath.Join(dir, "heaven", headState, "team-a"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%s %d", b.Head(), rev), strings.TrimSpace(string(data)))
	rec, err := b.readHead()
	require.NoError(t, err)
	assert.Equal(t, recordedHead{commit: b.Head(), revision: rev}, rec, "a note reads as a record")
}

// openTeamA opens the repository at dir (closed with the test, or before)
// and its branch team-a, with the object files of the tests.
func openTeamA(t *testing.T, dir string) (*Repository, *Branch) {
	t.Helper()
	r, err := Open(dir, Options{PollInterval: 10 * time.Millisecond, ReadFile: readObjectFile})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	return r, b
}

// A crash after a move back that the head record had not caught up with
// (it lags by up to headStateInterval): the revisions handed out since
// the record are not in git any more, and must not be handed out again.
// The branch reopens above the revision floor.
func TestMoveBackInTheRecordsWindowThenCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, b := openTeamA(t, dir)
	put(t, b, "/core/cm/default/a", `{"name":"a","v":1}`)
	waitGitRef(t, dir, "team-a", b.Head())
	old, oldRev := b.Head(), b.Revision()
	for i := range 5 {
		put(t, b, fmt.Sprintf("/core/cm/default/s%d", i), fmt.Sprintf(`{"name":"s%d"}`, i))
	}
	handedOut := b.Revision()
	require.NoError(t, r.Close())
	// What a crash leaves: the last periodic record, from before the
	// writes, and a ref moved back to it.
	record := filepath.Join(dir, "heaven", headState, "team-a")
	require.NoError(t, os.WriteFile(record, []byte(fmt.Sprintf("%s %d\n", old, oldRev)), 0o600))
	git(t, filepath.Dir(dir), "--git-dir", dir, "update-ref", "refs/heads/team-a", old.String())

	r, b = openTeamA(t, dir)
	require.Greater(t, b.Revision(), handedOut, "no revision handed out before the crash is handed out again")
	rev := put(t, b, "/core/cm/default/after", `{"name":"after"}`)
	require.Greater(t, rev, handedOut)
	require.Nil(t, get(t, b, "/core/cm/default/s0", 0), "the branch is what the move left")
}

// A branch whose keys have the longest names Kubernetes allows can be
// cloned and checked out (every path component ≤ 255 bytes).
func TestLongNamesCanBeCheckedOut(t *testing.T) {
	_, b, dir := openTestBranch(t)
	name := strings.Repeat("n", 253)
	put(t, b, "/core/configmaps/default/"+name, `{"name":"`+name+`"}`)
	waitGitRef(t, dir, "team-a", b.Head())
	wd := clone(t, dir, "team-a")
	data, err := os.ReadFile(filepath.Join(wd, "core/configmaps/default", name[:240]+"%~", name[240:]+".json"))
	require.NoError(t, err)
	require.Contains(t, string(data), name)
}

func TestLog(t *testing.T) {
	_, b, dir := openTestBranch(t)
	put(t, b, "/core/cm/default/a", `{"name":"a"}`)
	put(t, b, "/core/secrets/default/s", `{"name":"s"}`)
	put(t, b, "/core/cm/default/a", `{"name":"a","v":2}`)
	del(t, b, "/core/cm/default/a")
	waitGitRef(t, dir, "team-a", b.Head())
	wd := clone(t, dir, "team-a")
	push(t, wd, map[string]string{"core/cm/default/p.json": `{"name":"p"}`})
	waitFor(t, "the push", func() bool { return get(t, b, "/core/cm/default/p", 0) != nil })

	entries, next, err := b.Log(plumbing.ZeroHash, 0, "")
	require.NoError(t, err)
	require.True(t, next.IsZero())
	require.Len(t, entries, 5)
	require.Equal(t, b.Revision(), entries[0].Revision)
	require.Equal(t, "by hand\n", entries[0].Message)
	require.Equal(t, []KeyChange{{Key: "/core/cm/default/p", Path: "core/cm/default/p.json"}}, entries[0].Changes)
	require.Equal(t, []KeyChange{{Key: "/core/cm/default/a", Path: "core/cm/default/a.json", Deleted: true}}, entries[1].Changes)
	for i := 1; i < len(entries); i++ {
		require.Less(t, entries[i].Revision, entries[i-1].Revision, "newest first, revisions descending")
	}

	// Paged, and filtered by key prefix.
	page, next, err := b.Log(plumbing.ZeroHash, 2, "")
	require.NoError(t, err)
	require.Len(t, page, 2)
	rest, _, err := b.Log(next, 0, "")
	require.NoError(t, err)
	require.Equal(t, entries[2:], rest)
	secrets, _, err := b.Log(plumbing.ZeroHash, 0, "/core/secrets/")
	require.NoError(t, err)
	require.Len(t, secrets, 1)
	require.Equal(t, "/core/secrets/default/s", secrets[0].Changes[0].Key)
}
