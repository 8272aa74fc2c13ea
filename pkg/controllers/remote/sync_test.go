package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/gitremote"
)

const heaven = "shared"

// server is one heaven-server's git store, with the controller's view of
// it, as pkg/server wires it.
type server struct {
	repo *gitstore.Repository
	git  Git
}

func newServer(t *testing.T) *server {
	t.Helper()
	repo, err := gitstore.Open(filepath.Join(t.TempDir(), "heavens.git"), gitstore.Options{PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	g := repo.Git()
	return &server{repo: repo, git: Git{
		Commits:    repo,
		IsAncestor: repo.IsAncestor,
		Head: func(name string) (plumbing.Hash, error) {
			h, _, err := repo.Head(name)
			return h, err
		},
		Create: func(name string, at plumbing.Hash) error {
			return g.CompareAndSwapRef(plumbing.NewBranchReferenceName(name), at, plumbing.ZeroHash)
		},
		Open: func(ctx context.Context, name string) (gitstore.MergeTarget, error) { return repo.Branch(ctx, name) },
		Fetch: func(ctx context.Context, url, branch string, tracking, local plumbing.ReferenceName) (plumbing.Hash, error) {
			return gitremote.Fetch(ctx, g, url, branch, tracking, local)
		},
		Push: func(ctx context.Context, url, branch string, head, old plumbing.Hash) error {
			return gitremote.Push(ctx, g, url, branch, head, old)
		},
		ValidURL: gitremote.ValidateURL,
	}}
}

func (s *server) branch(t *testing.T) *gitstore.Branch {
	t.Helper()
	b, err := s.repo.Branch(context.Background(), heaven)
	require.NoError(t, err)
	return b
}

func (s *server) put(t *testing.T, key, value string) {
	t.Helper()
	_, err := s.branch(t).Put(context.Background(), key, []byte(value))
	require.NoError(t, err)
}

// objects are the heaven's keys and values, as its branch's head holds
// them.
func (s *server) objects(t *testing.T) map[string]string {
	t.Helper()
	head, err := s.git.Head(heaven)
	require.NoError(t, err)
	snap, err := s.repo.Snapshot(head)
	require.NoError(t, err)
	out := map[string]string{}
	for k, v := range snap {
		out[k] = string(v)
	}
	return out
}

// exchange runs one exchange of s with the remote at url, remembering
// idle heads as the controller does.
func (s *server) exchange(t *testing.T, p *plan) *round {
	t.Helper()
	r, err := exchange(context.Background(), s.git, p, [2]plumbing.Hash{})
	require.NoError(t, err)
	return r
}

func bareRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	cmd := exec.Command("git", "init", "-q", "--bare", dir)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dir
}

func testPlan(t *testing.T, url string) *plan {
	t.Helper()
	p, err := compile(heaven, &v1alpha1.Remote{URL: url}, gitremote.ValidateURL, nil)
	require.NoError(t, err)
	return p
}

const (
	cmA = "/core/configmaps/default/a"
	cmB = "/core/configmaps/default/b"
	cmC = "/core/configmaps/default/c"
)

// heads of both servers' branches.
func heads(t *testing.T, a, b *server) [2]plumbing.Hash {
	ha, err := a.git.Head(heaven)
	require.NoError(t, err)
	hb, err := b.git.Head(heaven)
	require.NoError(t, err)
	return [2]plumbing.Hash{ha, hb}
}

// Two servers tracking one remote branch exchange their writes, merge the
// same object field by field, and once they agree, further exchanges write
// and push nothing: no ping-pong.
func TestTwoServersConvergeWithoutPingPong(t *testing.T) {
	ctx := context.Background()
	p := testPlan(t, bareRemote(t))
	a, b := newServer(t), newServer(t)

	a.put(t, cmA, `{"metadata":{"name":"a"},"data":{"x":"1","y":"1"}}`+"\n")
	r := a.exchange(t, p)
	assert.Equal(t, r.Local, r.Pushed, "the remote had no branch: pushed")

	cloned, err := Clone(ctx, b.git, heaven, &v1alpha1.Remote{URL: p.url})
	require.NoError(t, err)
	require.True(t, cloned)
	assert.Equal(t, a.objects(t), b.objects(t), "a clone starts where the remote is")

	// Both write: different objects, and different fields of one object.
	b.put(t, cmB, `{"metadata":{"name":"b"}}`+"\n")
	b.put(t, cmA, `{"metadata":{"name":"a"},"data":{"x":"2","y":"1"}}`+"\n")
	a.put(t, cmC, `{"metadata":{"name":"c"}}`+"\n")
	a.put(t, cmA, `{"metadata":{"name":"a"},"data":{"x":"1","y":"2"}}`+"\n")

	rb := b.exchange(t, p)
	assert.False(t, rb.Pushed.IsZero(), "b pushes its writes")
	ra := a.exchange(t, p)
	require.NotNil(t, ra.Merge)
	assert.False(t, ra.Merge.Written.Commit.IsZero(), "a merges b's writes")
	assert.Empty(t, ra.Merge.Conflicts, "different fields of one object merge")
	assert.False(t, ra.Pushed.IsZero(), "and pushes the merge, which holds its own writes")
	rb = b.exchange(t, p)
	assert.True(t, rb.Pushed.IsZero(), "b takes a's merge and has nothing the remote lacks")
	assert.True(t, rb.InSync)

	want := map[string]string{
		cmA: `{"metadata":{"name":"a"},"data":{"x":"2","y":"2"}}` + "\n",
		cmB: `{"metadata":{"name":"b"}}` + "\n",
		cmC: `{"metadata":{"name":"c"}}` + "\n",
	}
	assert.Equal(t, want, a.objects(t))
	assert.Equal(t, want, b.objects(t))

	settled := heads(t, a, b)
	for range 3 {
		assert.True(t, nothingDone(a.exchange(t, p)))
		assert.True(t, nothingDone(b.exchange(t, p)))
	}
	assert.Equal(t, settled, heads(t, a, b), "converged servers write nothing more")
}

// A merge that changes nothing is still written, as a merge commit without
// changes, when the heaven has more to push: the remote takes only a head
// that descends from its own.
func TestJoinWhenTheMergeChangesNothingButTheHeavenHasMore(t *testing.T) {
	ctx := context.Background()
	p := testPlan(t, bareRemote(t))
	a, b := newServer(t), newServer(t)
	a.put(t, cmA, `{"v":1}`)
	a.exchange(t, p)
	_, err := Clone(ctx, b.git, heaven, &v1alpha1.Remote{URL: p.url})
	require.NoError(t, err)

	b.put(t, cmB, `{"v":"same"}`) // the same write on both sides
	a.put(t, cmC, `{"v":"only a"}`)
	a.put(t, cmB, `{"v":"same"}`)
	b.exchange(t, p)
	rev := a.branch(t).Revision()
	ra := a.exchange(t, p)
	require.NotNil(t, ra.Merge)
	assert.Zero(t, ra.Merge.Changes)
	assert.False(t, ra.Joined.IsZero(), "joined")
	assert.Equal(t, ra.Joined, ra.Pushed)
	assert.Equal(t, rev, a.branch(t).Revision(), "a merge without changes takes no revision")

	b.exchange(t, p)
	assert.Equal(t, a.objects(t), b.objects(t))
	settled := heads(t, a, b)
	a.exchange(t, p)
	b.exchange(t, p)
	assert.Equal(t, settled, heads(t, a, b))
}

// Servers that started apart (unrelated histories, each with its own
// objects) merge two-way; conflicts take the remote's value by default.
func TestUnrelatedHistoriesMergeAndConflictsPreferTheRemote(t *testing.T) {
	p := testPlan(t, bareRemote(t))
	a, b := newServer(t), newServer(t)
	a.put(t, cmA, `{"metadata":{"name":"a","uid":"from-a"}}`+"\n")
	b.put(t, cmA, `{"metadata":{"name":"a","uid":"from-b"}}`+"\n")
	b.put(t, cmB, `{"metadata":{"name":"b"}}`+"\n")

	a.exchange(t, p)
	rb := b.exchange(t, p)
	require.NotNil(t, rb.Merge)
	require.Len(t, rb.Merge.Conflicts, 1)
	assert.Equal(t, ".metadata.uid", rb.Merge.Conflicts[0].Path)
	assert.EqualValues(t, "PreferSource", rb.Merge.Conflicts[0].Resolution)
	a.exchange(t, p)
	want := map[string]string{
		cmA: `{"metadata":{"name":"a","uid":"from-a"}}` + "\n",
		cmB: `{"metadata":{"name":"b"}}` + "\n",
	}
	assert.Equal(t, want, a.objects(t))
	assert.Equal(t, want, b.objects(t))
}

// A remote that cannot be reached fails the exchange and loses nothing:
// once it is back, both sides' writes of the meantime are exchanged.
func TestUnreachableRemoteLosesNothing(t *testing.T) {
	dir := bareRemote(t)
	p := testPlan(t, dir)
	a, b := newServer(t), newServer(t)
	a.put(t, cmA, `{"v":1}`)
	a.exchange(t, p)
	_, err := Clone(context.Background(), b.git, heaven, &v1alpha1.Remote{URL: p.url})
	require.NoError(t, err)

	moved := dir + ".away"
	require.NoError(t, os.Rename(dir, moved))
	a.put(t, cmB, `{"v":"a"}`)
	b.put(t, cmC, `{"v":"b"}`)
	_, err = exchange(context.Background(), a.git, p, [2]plumbing.Hash{})
	require.ErrorIs(t, err, errFetch)
	_, err = exchange(context.Background(), b.git, p, [2]plumbing.Hash{})
	require.ErrorIs(t, err, errFetch)

	require.NoError(t, os.Rename(moved, dir))
	a.exchange(t, p)
	b.exchange(t, p)
	a.exchange(t, p)
	want := map[string]string{cmA: `{"v":1}`, cmB: `{"v":"a"}`, cmC: `{"v":"b"}`}
	assert.Equal(t, want, a.objects(t))
	assert.Equal(t, want, b.objects(t))
}

// push: false merges the remote and never pushes.
func TestFetchOnly(t *testing.T) {
	p := testPlan(t, bareRemote(t))
	a, b := newServer(t), newServer(t)
	a.put(t, cmA, `{"v":1}`)
	a.exchange(t, p)
	b.put(t, cmB, `{"v":2}`)
	noPush := *p
	noPush.push = false
	r := b.exchange(t, &noPush)
	assert.True(t, r.Pushed.IsZero())
	assert.True(t, r.Joined.IsZero())
	assert.Equal(t, map[string]string{cmA: `{"v":1}`, cmB: `{"v":2}`}, b.objects(t))
	a.exchange(t, p)
	assert.Equal(t, map[string]string{cmA: `{"v":1}`}, a.objects(t), "b pushed nothing")
}
