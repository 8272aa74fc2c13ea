package gitstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openTestRepo(t *testing.T, dir string) *Repository {
	t.Helper()
	r, err := Open(dir, Options{PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r
}

func openTestBranch(t *testing.T) (*Repository, *Branch, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r := openTestRepo(t, dir)
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	return r, b, dir
}

func put(t *testing.T, b *Branch, key, value string) int64 {
	t.Helper()
	rev, err := b.Put(context.Background(), key, []byte(value))
	require.NoError(t, err)
	return rev
}

// putLeased writes key attached to lease.
func putLeased(ctx context.Context, b *Branch, key, value string, lease int64) error {
	_, err := b.Txn(ctx, &Txn{Then: []Op{{Put: &PutOp{Key: key, Value: []byte(value), Lease: lease}}}})
	return err
}

func get(t *testing.T, b *Branch, key string, rev int64) *KeyValue {
	t.Helper()
	resp, err := b.Range(context.Background(), &RangeRequest{Key: key, Revision: rev})
	require.NoError(t, err)
	if len(resp.KVs) == 0 {
		return nil
	}
	return &resp.KVs[0]
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

func TestPutRangeRevisions(t *testing.T) {
	_, b, _ := openTestBranch(t)
	require.Equal(t, int64(1), b.Revision())
	r1 := put(t, b, "/registry/cm/a", `{"v":1}`)
	r2 := put(t, b, "/registry/cm/a", `{"v":2}`)
	r3 := put(t, b, "/registry/cm/b", "plain")
	require.Equal(t, []int64{2, 3, 4}, []int64{r1, r2, r3})

	kv := get(t, b, "/registry/cm/a", 0)
	require.Equal(t, `{"v":2}`, string(kv.Value))
	require.Equal(t, int64(2), kv.CreateRevision)
	require.Equal(t, int64(3), kv.ModRevision)
	require.Equal(t, int64(2), kv.Version)

	old := get(t, b, "/registry/cm/a", 2)
	require.Equal(t, `{"v":1}`, string(old.Value))
	require.Nil(t, get(t, b, "/registry/cm/b", 3))

	resp, err := b.Range(context.Background(), &RangeRequest{Key: "/registry/", End: "/registry0", Limit: 1})
	require.NoError(t, err)
	require.Len(t, resp.KVs, 1)
	require.Equal(t, int64(2), resp.Count)
	require.True(t, resp.More)

	resp, err = b.Range(context.Background(), &RangeRequest{Key: "/registry/", End: "/registry0", CountOnly: true})
	require.NoError(t, err)
	require.Equal(t, int64(2), resp.Count)
	require.Empty(t, resp.KVs)

	_, err = b.Range(context.Background(), &RangeRequest{Key: "/x", Revision: 99})
	require.ErrorIs(t, err, ErrFutureRev)
}

func TestTxnCompares(t *testing.T) {
	_, b, _ := openTestBranch(t)
	rev := put(t, b, "/k", "v1")
	ctx := context.Background()
	putOp := func(v string) Op { return Op{Put: &PutOp{Key: "/k", Value: []byte(v)}} }
	cmpMod := func(key string, r int64) Compare {
		return Compare{Key: key, Target: CompareModRevision, Result: Equal, Number: r}
	}
	resp, err := b.Txn(ctx, &Txn{If: []Compare{cmpMod("/k", rev)}, Then: []Op{putOp("v2")}})
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	resp, err = b.Txn(ctx, &Txn{If: []Compare{cmpMod("/k", rev)}, Then: []Op{putOp("v3")},
		Else: []Op{{Range: &RangeRequest{Key: "/k"}}}})
	require.NoError(t, err)
	require.False(t, resp.Succeeded)
	require.Equal(t, "v2", string(resp.Results[0].Range.KVs[0].Value))

	// Create-if-absent, as the apiserver does.
	create := &Txn{If: []Compare{cmpMod("/new", 0)}, Then: []Op{{Put: &PutOp{Key: "/new", Value: []byte("x")}}}}
	resp, err = b.Txn(ctx, create)
	require.NoError(t, err)
	require.True(t, resp.Succeeded)
	resp, err = b.Txn(ctx, create)
	require.NoError(t, err)
	require.False(t, resp.Succeeded)

	_, err = b.Txn(ctx, &Txn{Then: []Op{putOp("a"), putOp("b")}})
	require.ErrorIs(t, err, ErrDuplicateKey)
}

func TestDeleteRangeAndTombstones(t *testing.T) {
	_, b, _ := openTestBranch(t)
	put(t, b, "/p/a", "1")
	put(t, b, "/p/b", "2")
	resp, err := b.Txn(context.Background(), &Txn{Then: []Op{{Delete: &DeleteOp{Key: "/p/", End: "/p0", PrevKV: true}}}})
	require.NoError(t, err)
	require.Equal(t, int64(2), resp.Results[0].Delete.Deleted)
	require.Len(t, resp.Results[0].Delete.PrevKVs, 2)
	require.Equal(t, int64(4), resp.Revision, "one revision for the whole delete")
	require.Nil(t, get(t, b, "/p/a", 0))
	require.Equal(t, "1", string(get(t, b, "/p/a", 3).Value))
	// Deleting nothing takes no revision.
	deleted, _, err := b.Delete(context.Background(), "/p/a")
	require.NoError(t, err)
	require.False(t, deleted)
	require.Equal(t, int64(4), b.Revision())
	// Recreated key starts a new generation.
	put(t, b, "/p/a", "3")
	kv := get(t, b, "/p/a", 0)
	require.Equal(t, int64(5), kv.CreateRevision)
	require.Equal(t, int64(1), kv.Version)
}

func TestRestartKeepsRevisionsAndMetadata(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, err := Open(dir, Options{})
	require.NoError(t, err)
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	put(t, b, "/a", `{"n":1}`)
	put(t, b, "/b", "x")
	put(t, b, "/a", `{"n":2}`)
	put(t, b, "/a", `{"n":2}`) // identical bytes still bump version
	_, _, err = b.Delete(context.Background(), "/b")
	require.NoError(t, err)
	put(t, b, "/b", "y")
	want := map[string]*KeyValue{"/a": get(t, b, "/a", 0), "/b": get(t, b, "/b", 0)}
	wantOld := get(t, b, "/a", 3)
	wantRev := b.Revision()
	require.NoError(t, r.Close())

	r2 := openTestRepo(t, dir)
	b2, err := r2.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	require.Equal(t, wantRev, b2.Revision())
	for k, kv := range want {
		require.Equal(t, kv, get(t, b2, k, 0), k)
	}
	require.Equal(t, wantOld, get(t, b2, "/a", 3), "old revision read from git after restart")
	require.Equal(t, wantRev+1, put(t, b2, "/c", "z"))
}

func TestGitLayoutIsReadable(t *testing.T) {
	_, b, dir := openTestBranch(t)
	put(t, b, "/registry/configmaps/default/web", `{"kind":"ConfigMap","data":{"a":"b"}}`+"\n")
	waitGitRef(t, dir, "team-a", b.Head())
	out := git(t, dir, "show", "team-a:registry/configmaps/default/web.json")
	require.Contains(t, out, "\n  \"kind\": \"ConfigMap\",\n", "one field per line")
	log := git(t, dir, "log", "--format=%s", "team-a")
	require.Equal(t, "create registry/configmaps/default/web\n", log)
	git(t, dir, "fsck", "--strict")
}

func TestLeasedKeysStayOutOfGitAndExpire(t *testing.T) {
	r, b, dir := openTestBranch(t)
	put(t, b, "/durable", "d")
	l, err := r.LeaseGrant(0, 2)
	require.NoError(t, err)
	err = putLeased(context.Background(), b, "/events/e1", "e", l.ID)
	require.NoError(t, err)
	require.NotNil(t, get(t, b, "/events/e1", 0))
	waitGitRef(t, dir, "team-a", b.Head())
	require.NotContains(t, git(t, dir, "ls-tree", "-r", "--name-only", "team-a"), "events")
	err = putLeased(context.Background(), b, "/x", "e", 12345)
	require.ErrorIs(t, err, ErrLeaseNotFound)

	deadline := time.Now().Add(10 * time.Second)
	for get(t, b, "/events/e1", 0) != nil {
		require.True(t, time.Now().Before(deadline), "leased key did not expire")
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWatchFromPastRevisionWithPrevKV(t *testing.T) {
	_, b, _ := openTestBranch(t)
	r1 := put(t, b, "/w/a", "1")
	put(t, b, "/w/a", "2")
	put(t, b, "/other", "x")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := b.Watch(ctx, WatchRequest{Key: "/w/", End: "/w0", StartRevision: r1, PrevKV: true})
	require.NoError(t, err)
	_, _, err = b.Delete(ctx, "/w/a")
	require.NoError(t, err)

	var events []Event
	for len(events) < 3 {
		select {
		case resp := <-w.Responses():
			events = append(events, resp.Events...)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %d events, want 3", len(events))
		}
	}
	require.Equal(t, "1", string(events[0].KV.Value))
	require.Equal(t, "1", string(events[1].PrevKV.Value))
	require.Equal(t, EventDelete, events[2].Type)
	require.Equal(t, "2", string(events[2].PrevKV.Value))
	for i := 1; i < len(events); i++ {
		require.Greater(t, events[i].KV.ModRevision, events[i-1].KV.ModRevision)
	}

	w.RequestProgress()
	select {
	case resp := <-w.Responses():
		require.True(t, resp.Progress)
		require.Equal(t, b.Revision(), resp.Revision)
	case <-time.After(5 * time.Second):
		t.Fatal("no progress response")
	}
}

func TestCompact(t *testing.T) {
	_, b, _ := openTestBranch(t)
	put(t, b, "/a", "1")
	r := put(t, b, "/a", "2")
	put(t, b, "/a", "3")
	require.NoError(t, b.Compact(context.Background(), r))
	_, err := b.Range(context.Background(), &RangeRequest{Key: "/a", Revision: r - 1})
	require.ErrorIs(t, err, ErrCompacted)
	require.Equal(t, "2", string(get(t, b, "/a", r).Value))
	require.ErrorIs(t, b.Compact(context.Background(), r), ErrCompacted)
	_, err = b.Watch(context.Background(), WatchRequest{Key: "/a", StartRevision: r - 1})
	require.NoError(t, err)
}

// TestRangeCompacted: reads before the compaction point come from git,
// with the revision read at as each key's revisions.
func TestRangeCompacted(t *testing.T) {
	_, b, _ := openTestBranch(t)
	first := put(t, b, "/p/a", "1")
	put(t, b, "/p/b", "1")
	put(t, b, "/q/c", "1")
	r := put(t, b, "/p/a", "2")
	require.NoError(t, b.Compact(context.Background(), r))

	old := r - 1
	res, err := b.RangeCompacted(&RangeRequest{Key: "/p/", End: "/p0", Revision: old})
	require.NoError(t, err)
	require.Len(t, res.KVs, 2)
	require.Equal(t, "/p/a", res.KVs[0].Key)
	require.Equal(t, "1", string(res.KVs[0].Value), "the value at the old revision")
	require.Equal(t, old, res.KVs[0].ModRevision)
	require.Equal(t, b.Revision(), res.Revision)

	res, err = b.RangeCompacted(&RangeRequest{Key: "/p/", End: "/p0", Revision: first, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Count, "only /p/a existed then")
	require.False(t, res.More)

	res, err = b.RangeCompacted(&RangeRequest{Key: "/p/a", Revision: r})
	require.NoError(t, err)
	require.Equal(t, "2", string(res.KVs[0].Value), "at or after the compaction point, from memory")
	require.Equal(t, r, res.KVs[0].ModRevision)

	_, err = b.RangeCompacted(&RangeRequest{Key: "/p/a", Revision: first - 1})
	require.ErrorIs(t, err, ErrCompacted, "before the branch's first commit")
}

func TestPicksUpPushedCommits(t *testing.T) {
	_, b, dir := openTestBranch(t)
	put(t, b, "/registry/a", `{"a":1}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := b.Watch(ctx, WatchRequest{Key: "/registry/", End: "/registry0"})
	require.NoError(t, err)

	work := t.TempDir()
	waitGitRef(t, dir, "team-a", b.Head())
	git(t, work, "clone", "-q", "--branch", "team-a", dir, "w")
	wd := filepath.Join(work, "w")
	require.NoError(t, os.WriteFile(filepath.Join(wd, "registry", "b.json"), []byte("{\n  \"b\": 2\n}\n"), 0o644))
	git(t, wd, "add", ".")
	git(t, wd, "commit", "-qm", "add b by hand")
	git(t, wd, "push", "-q", "origin", "team-a")

	select {
	case resp := <-w.Responses():
		require.Len(t, resp.Events, 1)
		require.Equal(t, "/registry/b", string(resp.Events[0].KV.Key))
		require.Equal(t, `{"b":2}`+"\n", string(resp.Events[0].KV.Value))
	case <-time.After(5 * time.Second):
		t.Fatal("pushed commit not picked up")
	}
	rev := b.Revision()

	// A force-push back in time must not make revisions go backwards.
	git(t, wd, "reset", "-q", "--hard", "HEAD~1")
	require.NoError(t, os.WriteFile(filepath.Join(wd, "registry", "c.json"), []byte(`{"c":3}`), 0o644))
	git(t, wd, "add", ".")
	git(t, wd, "commit", "-qm", "rewrite")
	git(t, wd, "push", "-q", "-f", "origin", "team-a")
	deadline := time.Now().Add(5 * time.Second)
	for get(t, b, "/registry/c", 0) == nil {
		require.True(t, time.Now().Before(deadline), "force-push not picked up")
		time.Sleep(20 * time.Millisecond)
	}
	require.Greater(t, b.Revision(), rev)
	require.Nil(t, get(t, b, "/registry/b", 0), "content follows the pushed branch")
	waitGitRef(t, dir, "team-a", b.Head())
	log := git(t, dir, "log", "--format=%s", "-1", "team-a")
	require.True(t, strings.HasPrefix(log, "Merge "), log)
	git(t, dir, "fsck", "--strict")

	// Our next write lands on top of the merge.
	put(t, b, "/registry/d", "x")
	waitGitRef(t, dir, "team-a", b.Head())
	require.Equal(t, fmt.Sprint(b.Revision()), strings.TrimSpace(strings.TrimPrefix(
		strings.TrimSpace(git(t, dir, "log", "-1", "--format=%(trailers:key=Heaven-Revision)", "team-a")), "Heaven-Revision:")))
}

func TestBranchesHaveTheirOwnRevisionsAndClose(t *testing.T) {
	r, a, _ := openTestBranch(t)
	bb, err := r.Branch(context.Background(), "team-b")
	require.NoError(t, err)
	put(t, a, "/k", "a1")
	put(t, a, "/k", "a2")
	require.Equal(t, int64(2), put(t, bb, "/k", "b1"))
	require.Equal(t, "a2", string(get(t, a, "/k", 0).Value))
	require.Equal(t, "b1", string(get(t, bb, "/k", 0).Value))

	w, err := bb.Watch(context.Background(), WatchRequest{Key: "/k"})
	require.NoError(t, err)
	require.NoError(t, r.CloseBranch("team-b"))
	for resp := range w.Responses() {
		require.True(t, resp.Canceled, "only a cancellation after close")
	}
	_, err = bb.Range(context.Background(), &RangeRequest{Key: "/k"})
	require.ErrorIs(t, err, ErrClosed)

	again, err := r.Branch(context.Background(), "team-b")
	require.NoError(t, err)
	require.Equal(t, int64(2), again.Revision())
	require.Equal(t, "b1", string(get(t, again, "/k", 0).Value))

	_, err = r.Branch(context.Background(), "../evil")
	require.ErrorIs(t, err, ErrInvalidBranch)
}

func TestCompactionSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, err := Open(dir, Options{})
	require.NoError(t, err)
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	put(t, b, "/a", "1")
	rev := put(t, b, "/a", "2")
	require.NoError(t, b.Compact(context.Background(), rev))
	require.NoError(t, r.Close())

	b2, err := openTestRepo(t, dir).Branch(context.Background(), "team-a")
	require.NoError(t, err)
	require.Equal(t, rev, b2.CompactRevision())
	_, err = b2.Range(context.Background(), &RangeRequest{Key: "/a", Revision: rev - 1})
	require.ErrorIs(t, err, ErrCompacted)
	require.Equal(t, "2", string(get(t, b2, "/a", rev).Value))
}

func TestFailedTxnDoesNotRaiseRevisionFloor(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "heavens.git")
	r, err := Open(dir, Options{})
	require.NoError(t, err)
	b, err := r.Branch(context.Background(), "team-a")
	require.NoError(t, err)
	rev := put(t, b, "/k", "v")
	resp, err := b.Txn(context.Background(), &Txn{
		If:   []Compare{{Key: "/k", Target: CompareModRevision, Result: Equal, Number: 1}},
		Then: []Op{{Put: &PutOp{Key: "/k", Value: []byte("w")}}},
	})
	require.NoError(t, err)
	require.False(t, resp.Succeeded)
	require.NoError(t, r.Close())
	b2, err := openTestRepo(t, dir).Branch(context.Background(), "team-a")
	require.NoError(t, err)
	require.Equal(t, rev, b2.Revision())
}

func TestWatchDropsPrevKVOfCompactedRevision(t *testing.T) {
	_, b, _ := openTestBranch(t)
	put(t, b, "/k", "a")
	put(t, b, "/k", "b")
	rev := put(t, b, "/k", "c")
	require.NoError(t, b.Compact(context.Background(), rev))
	w, err := b.Watch(context.Background(), WatchRequest{Key: "/k", StartRevision: rev, PrevKV: true})
	require.NoError(t, err)
	defer w.Close()
	select {
	case resp := <-w.Responses():
		require.Len(t, resp.Events, 1)
		require.Nil(t, resp.Events[0].PrevKV)
	case <-time.After(5 * time.Second):
		t.Fatal("no event")
	}
}

// Writes carry who asked: each commit has one author (the store commits),
// writes of different authors in one group commit get commits of their
// own, and a name that would break the signature is made safe.
func TestCommitsAreAuthoredByWhoAsked(t *testing.T) {
	_, b, dir := openTestBranch(t)
	ctx := context.Background()
	write := func(author, key string) {
		_, err := b.Txn(ctx, &Txn{Author: author, Then: []Op{{Put: &PutOp{Key: key, Value: []byte("{}")}}}})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for i, author := range []string{"alice", "bob", "alice", "", "system:serviceaccount:ns:sa", "eve <evil>\nX"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			write(author, fmt.Sprintf("/core/configmaps/default/k%d", i))
		}()
	}
	wg.Wait()
	waitGitRef(t, dir, "team-a", b.Head())
	log := git(t, dir, "log", "--format=%an|%cn|%s", "team-a")
	commits := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		parts := strings.SplitN(line, "|", 3)
		require.Len(t, parts, 3, line)
		require.Equal(t, "heaven", parts[1], "the store commits: %s", line)
		commits[parts[0]] = append(commits[parts[0]], parts[2])
	}
	for author, keys := range map[string][]string{"alice": {"k0", "k2"}, "bob": {"k1"}, "heaven": {"k3"},
		"system:serviceaccount:ns:sa": {"k4"}, "eve _evil__X": {"k5"}} {
		var got []string
		for _, subject := range commits[author] {
			for _, k := range []string{"k0", "k1", "k2", "k3", "k4", "k5"} {
				if strings.Contains(subject, "/"+k) {
					got = append(got, k)
				}
			}
		}
		assert.ElementsMatch(t, keys, got, "commits of %q: %v", author, commits[author])
	}
	git(t, dir, "fsck", "--strict")
}

func TestWatchFunc(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end ends the watch: returns whether deliver saw a context end.
		end func(w *Watcher, cancel context.CancelFunc, refuse *atomic.Bool)
	}{
		{"closed", func(w *Watcher, _ context.CancelFunc, _ *atomic.Bool) { w.Close() }},
		{"caller's context ends", func(_ *Watcher, cancel context.CancelFunc, _ *atomic.Bool) { cancel() }},
		{"deliver refuses", func(_ *Watcher, _ context.CancelFunc, refuse *atomic.Bool) { refuse.Store(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, b, _ := openTestBranch(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			got := make(chan WatchResponse, 100)
			ended := make(chan *Watcher, 2)
			var refuse atomic.Bool
			deliver := func(_ context.Context, r WatchResponse) bool {
				if refuse.Load() {
					return false
				}
				got <- r
				return true
			}
			w, err := b.WatchFunc(ctx, WatchRequest{Key: "/w/", End: "/w0", ProgressEvery: 50 * time.Millisecond}, deliver, func(w *Watcher) { ended <- w })
			require.NoError(t, err)
			require.Nil(t, w.Responses())
			r1 := put(t, b, "/w/a", "1")
			put(t, b, "/other", "x")
			r3 := put(t, b, "/w/b", "2")

			var events []Event
			progress := false
			for deadline := time.After(10 * time.Second); len(events) < 2 || !progress; {
				select {
				case r := <-got:
					events = append(events, r.Events...)
					progress = progress || (r.Progress && r.Revision >= r3)
				case <-deadline:
					t.Fatalf("got %d events (want 2) and progress %v", len(events), progress)
				}
			}
			require.Equal(t, r1, events[0].KV.ModRevision)
			require.Equal(t, r3, events[1].KV.ModRevision)

			tc.end(w, cancel, &refuse)
			if tc.name == "deliver refuses" {
				put(t, b, "/w/c", "3") // something to refuse
			}
			select {
			case e := <-ended:
				require.Same(t, w, e)
			case <-time.After(10 * time.Second):
				t.Fatal("the watch did not end")
			}
			select {
			case <-ended:
				t.Fatal("ended called twice")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}
