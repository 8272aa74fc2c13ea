package gitstore

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forkedPair makes branch "main" with keys /a, /b, /c and a fork "side" of
// it.
func forkedPair(t *testing.T) (repo *Repository, main, side *Branch, dir string) {
	t.Helper()
	repo, main, dir = openTestBranchNamed(t, "main")
	put(t, main, "/core/configmaps/default/a", `{"v":"a0"}`+"\n")
	put(t, main, "/core/configmaps/default/b", `{"v":"b0"}`+"\n")
	put(t, main, "/core/configmaps/default/c", `{"v":"c0"}`+"\n")
	ctx := context.Background()
	_, _, err := repo.Fork(ctx, "side", "main", 0)
	require.NoError(t, err)
	side, err = repo.Branch(ctx, "side")
	require.NoError(t, err)
	return repo, main, side, dir
}

func openTestBranchNamed(t *testing.T, name string) (*Repository, *Branch, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r := openTestRepo(t, dir)
	b, err := r.Branch(context.Background(), name)
	require.NoError(t, err)
	return r, b, dir
}

// waitGitRef waits until the git CLI sees branch at commit: the store
// renames a ref file into place just after the commit is acknowledged
// (gitrepo.Repo.Commit), and the first commit creates it.
func waitGitRef(t *testing.T, dir, branch string, want plumbing.Hash) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("git", "--git-dir", dir, "rev-parse", "--verify", "-q", "refs/heads/"+branch).Output()
		if strings.TrimSpace(string(out)) == want.String() {
			return
		}
		require.True(t, time.Now().Before(deadline), "git does not see %s at %s", branch, want)
		time.Sleep(5 * time.Millisecond)
	}
}

func del(t *testing.T, b *Branch, key string) {
	t.Helper()
	_, _, err := b.Delete(context.Background(), key)
	require.NoError(t, err)
}

func TestMergeWritesOneTwoParentCommitAtOneRevision(t *testing.T) {
	const a, b, c, d = "/core/configmaps/default/a", "/core/configmaps/default/b", "/core/configmaps/default/c", "/core/configmaps/default/d"
	for _, tc := range []struct {
		name    string
		puts    map[string]string
		deletes []string
		// want: key → value after the merge ("" absent), and its version
		want map[string]string
		// created keys get create revision = the merge's revision
		created []string
	}{
		{name: "create", puts: map[string]string{d: `{"v":"d1"}` + "\n"},
			want: map[string]string{a: `{"v":"a0"}` + "\n", d: `{"v":"d1"}` + "\n"}, created: []string{d}},
		{name: "update", puts: map[string]string{a: `{"v":"a1"}` + "\n"},
			want: map[string]string{a: `{"v":"a1"}` + "\n", b: `{"v":"b0"}` + "\n"}},
		{name: "delete", deletes: []string{c},
			want: map[string]string{c: "", b: `{"v":"b0"}` + "\n"}},
		{name: "all three", puts: map[string]string{a: `{"v":"a1"}` + "\n", d: "plain text"}, deletes: []string{c},
			want: map[string]string{a: `{"v":"a1"}` + "\n", c: "", d: "plain text"}, created: []string{d}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, main, side, dir := forkedPair(t)
			ctx := context.Background()
			// The source made the changes the merge brings over.
			for k, v := range tc.puts {
				put(t, side, k, v)
			}
			for _, k := range tc.deletes {
				del(t, side, k)
			}
			// The target moved on too, elsewhere.
			put(t, main, b, `{"v":"b1"}`+"\n")
			if v, ok := tc.want[b]; ok && v != "" {
				tc.want[b] = `{"v":"b1"}` + "\n"
			}
			before := map[string]*KeyValue{}
			for k := range tc.want {
				before[k] = get(t, main, k, 0)
			}
			startRev := main.Revision()
			w, err := main.Watch(ctx, WatchRequest{Key: "/", End: "\x00", PrevKV: true})
			require.NoError(t, err)
			defer w.Close()

			puts := map[string][]byte{}
			for k, v := range tc.puts {
				puts[k] = []byte(v)
			}
			res, err := main.Merge(ctx, MergeRequest{ExpectedHead: main.Head(), SecondParent: side.Head(),
				Puts: puts, Deletes: tc.deletes, Message: "merge side into main"})
			require.NoError(t, err)
			require.False(t, res.Commit.IsZero())
			assert.Equal(t, startRev+1, res.Revision, "one revision for the whole merge")
			assert.Equal(t, res.Revision, main.Revision())
			assert.Equal(t, res.Commit, main.Head())

			check := func(t *testing.T, br *Branch) {
				t.Helper()
				for k, want := range tc.want {
					kv := get(t, br, k, 0)
					if want == "" {
						assert.Nil(t, kv, k)
						continue
					}
					require.NotNil(t, kv, k)
					assert.Equal(t, want, string(kv.Value), k)
					prev := before[k]
					switch {
					case prev == nil:
						assert.Equal(t, res.Revision, kv.CreateRevision, "%s: created by the merge", k)
						assert.Equal(t, int64(1), kv.Version, k)
						assert.Equal(t, res.Revision, kv.ModRevision, k)
					case string(prev.Value) != want:
						assert.Equal(t, prev.CreateRevision, kv.CreateRevision, "%s: create revision kept", k)
						assert.Equal(t, prev.Version+1, kv.Version, k)
						assert.Equal(t, res.Revision, kv.ModRevision, k)
					default:
						assert.Equal(t, prev.ModRevision, kv.ModRevision, "%s: untouched", k)
						assert.Equal(t, prev.Version, kv.Version, k)
					}
				}
			}
			check(t, main)

			// Watchers see ordinary events, all at the merge's revision.
			select {
			case resp := <-w.Responses():
				require.Len(t, resp.Events, len(tc.puts)+len(tc.deletes))
				for _, ev := range resp.Events {
					assert.Equal(t, res.Revision, ev.KV.ModRevision)
					if ev.Type == EventDelete {
						assert.NotNil(t, ev.PrevKV)
					}
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no watch event for the merge")
			}

			// git sees a merge commit: two parents, the target's head first.
			waitGitRef(t, dir, "main", res.Commit)
			parents := strings.Fields(git(t, dir, "log", "-1", "--format=%P", "main"))
			require.Len(t, parents, 2)
			assert.Equal(t, side.Head().String(), parents[1])
			assert.Contains(t, git(t, dir, "log", "--graph", "--oneline", "main"), "|\\")
			assert.Equal(t, "merge side into main", strings.TrimSpace(git(t, dir, "log", "-1", "--format=%s", "main")))
			git(t, dir, "fsck", "--strict")

			// A restart rebuilds the same revisions and values.
			require.NoError(t, repo.Close())
			repo2 := openTestRepo(t, dir)
			main2, err := repo2.Branch(ctx, "main")
			require.NoError(t, err)
			assert.Equal(t, res.Revision, main2.Revision())
			assert.Equal(t, res.Commit, main2.Head())
			check(t, main2)
			next := put(t, main2, a, `{"v":"after"}`+"\n")
			assert.Equal(t, res.Revision+1, next, "revisions go on after the merge")
		})
	}
}

func TestMergeFailsWhenHeadMovedAndWritesNothing(t *testing.T) {
	_, main, side, dir := forkedPair(t)
	ctx := context.Background()
	put(t, side, "/core/configmaps/default/a", `{"v":"side"}`)
	computedAt := main.Head()
	// A write lands between computing the merge and writing it.
	put(t, main, "/core/configmaps/default/a", `{"v":"main"}`)
	rev, head := main.Revision(), main.Head()

	_, err := main.Merge(ctx, MergeRequest{ExpectedHead: computedAt, SecondParent: side.Head(),
		Puts: map[string][]byte{"/core/configmaps/default/a": []byte(`{"v":"side"}`)}, Message: "stale merge"})
	require.ErrorIs(t, err, ErrHeadMoved)
	assert.Equal(t, rev, main.Revision())
	assert.Equal(t, head, main.Head())
	assert.Equal(t, `{"v":"main"}`, string(get(t, main, "/core/configmaps/default/a", 0).Value), "the concurrent write stays")
	waitGitRef(t, dir, "main", head)
	assert.Len(t, strings.Fields(git(t, dir, "log", "-1", "--format=%P", "main")), 1)

	// Recomputed on the new head, the merge goes through.
	res, err := main.Merge(ctx, MergeRequest{ExpectedHead: main.Head(), SecondParent: side.Head(),
		Puts: map[string][]byte{"/core/configmaps/default/b": []byte(`{"v":"x"}`)}, Message: "merge"})
	require.NoError(t, err)
	assert.Equal(t, rev+1, res.Revision)
}

func TestMergeWithoutChangesWritesNothing(t *testing.T) {
	_, main, side, _ := forkedPair(t)
	rev, head := main.Revision(), main.Head()
	res, err := main.Merge(context.Background(), MergeRequest{ExpectedHead: head, SecondParent: side.Head()})
	require.NoError(t, err)
	assert.True(t, res.Commit.IsZero())
	assert.Equal(t, rev, res.Revision)
	assert.Equal(t, head, main.Head())
}

// A joining merge without changes puts the source into the branch's
// history without a revision: nothing to watch, and a restart rebuilds the
// same revisions.
func TestMergeJoinWithoutChangesTakesNoRevision(t *testing.T) {
	repo, main, side, dir := forkedPair(t)
	ctx := context.Background()
	put(t, side, "/core/configmaps/default/d", `{"v":"d0"}`+"\n")
	put(t, main, "/core/configmaps/default/d", `{"v":"d0"}`+"\n") // the same change on both sides
	rev, head := main.Revision(), main.Head()
	w, err := main.Watch(ctx, WatchRequest{Key: "/", End: "\x00", StartRevision: rev + 1})
	require.NoError(t, err)
	defer w.Close()

	res, err := main.Merge(ctx, MergeRequest{ExpectedHead: head, SecondParent: side.Head(), Join: true, Message: "join side"})
	require.NoError(t, err)
	require.False(t, res.Commit.IsZero())
	assert.Equal(t, rev, res.Revision)
	assert.Equal(t, rev, main.Revision())
	assert.Equal(t, res.Commit, main.Head())
	waitGitRef(t, dir, "main", res.Commit)
	assert.Equal(t, head.String()+" "+side.Head().String(), strings.TrimSpace(git(t, dir, "log", "-1", "--format=%P", "main")))
	assert.Equal(t, "join side", strings.TrimSpace(git(t, dir, "log", "-1", "--format=%B", "main")))
	select {
	case resp := <-w.Responses():
		t.Fatalf("a joining merge without changes is not an event: %v", resp)
	case <-time.After(100 * time.Millisecond):
	}

	next := put(t, main, "/core/configmaps/default/e", `{"v":"e0"}`)
	assert.Equal(t, rev+1, next)
	require.NoError(t, repo.CloseBranch("main"))
	reopened, err := repo.Branch(ctx, "main")
	require.NoError(t, err)
	assert.Equal(t, next, reopened.Revision(), "a rebuild gives the same revisions")
}

func TestMergeRejectsBadRequests(t *testing.T) {
	_, main, side, _ := forkedPair(t)
	ctx := context.Background()
	const k = "/core/configmaps/default/a"
	for name, req := range map[string]MergeRequest{
		"put and delete of one key": {ExpectedHead: main.Head(), SecondParent: side.Head(), Puts: map[string][]byte{k: []byte("x")}, Deletes: []string{k}},
		"no second parent":          {ExpectedHead: main.Head(), Puts: map[string][]byte{k: []byte("x")}},
		"unknown second parent":     {ExpectedHead: main.Head(), SecondParent: plumbing.NewHash(strings.Repeat("ab", 20)), Puts: map[string][]byte{k: []byte("x")}},
		"target without commits":    {SecondParent: side.Head(), Puts: map[string][]byte{k: []byte("x")}},
	} {
		t.Run(name, func(t *testing.T) {
			rev := main.Revision()
			_, err := main.Merge(ctx, req)
			require.Error(t, err)
			assert.Equal(t, rev, main.Revision())
		})
	}
}

// Merges racing with writers: every merge either lands on the head it was
// computed against or fails with ErrHeadMoved; no write is ever lost.
func TestMergeRacingWritersLosesNoWrite(t *testing.T) {
	_, main, side, _ := forkedPair(t)
	ctx := context.Background()
	put(t, side, "/core/configmaps/default/from-side", `{"v":0}`)
	var wg sync.WaitGroup
	const writers, writes = 4, 20
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range writes {
				_, err := main.Put(ctx, fmt.Sprintf("/core/configmaps/w%d/k%d", w, i), []byte(`{"w":1}`))
				assert.NoError(t, err)
			}
		}()
	}
	merged, moved := 0, 0
	for i := range 30 {
		head := main.Head()
		res, err := main.Merge(ctx, MergeRequest{ExpectedHead: head, SecondParent: side.Head(),
			Puts: map[string][]byte{"/core/configmaps/default/from-side": []byte(fmt.Sprintf(`{"v":%d}`, i))}})
		switch {
		case err == nil:
			merged++
			assert.False(t, res.Commit.IsZero())
		case assert.ErrorIs(t, err, ErrHeadMoved):
			moved++
		}
	}
	wg.Wait()
	t.Logf("merged %d, head moved %d", merged, moved)
	resp, err := main.Range(ctx, &RangeRequest{Key: "/core/configmaps/w", End: "/core/configmaps/x", CountOnly: true})
	require.NoError(t, err)
	assert.Equal(t, int64(writers*writes), resp.Count)
}

func TestOnHeadReportsCommitsMergesAndPickedUpCommits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	heads := make(chan string, 100)
	repo, err := Open(dir, Options{PollInterval: 20 * time.Millisecond, OnHead: func(branch string, head plumbing.Hash) {
		heads <- branch + " " + head.String()
	}})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := context.Background()
	main, err := repo.Branch(ctx, "main")
	require.NoError(t, err)
	next := func() string {
		select {
		case h := <-heads:
			return h
		case <-time.After(5 * time.Second):
			t.Fatal("no OnHead call")
			return ""
		}
	}
	put(t, main, "/a", "1")
	assert.Equal(t, "main "+main.Head().String(), next(), "after a write")

	_, _, err = repo.Fork(ctx, "side", "main", 0)
	require.NoError(t, err)
	side, err := repo.Branch(ctx, "side")
	require.NoError(t, err)
	put(t, side, "/b", "2")
	assert.Equal(t, "side "+side.Head().String(), next())
	_, err = main.Merge(ctx, MergeRequest{ExpectedHead: main.Head(), SecondParent: side.Head(), Puts: map[string][]byte{"/b": []byte("2")}})
	require.NoError(t, err)
	assert.Equal(t, "main "+main.Head().String(), next(), "after a merge")

	// A commit pushed from outside, picked up by polling.
	waitGitRef(t, dir, "main", main.Head())
	work := filepath.Join(t.TempDir(), "work")
	git(t, t.TempDir(), "clone", "-q", "--branch", "main", dir, work)
	git(t, work, "commit", "-q", "--allow-empty", "-m", "from outside")
	git(t, work, "push", "-q", "origin", "HEAD:main")
	pushed := strings.TrimSpace(git(t, work, "rev-parse", "HEAD"))
	assert.Equal(t, "main "+pushed, next(), "after picking up a pushed commit")
}
