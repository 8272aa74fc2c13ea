package gitstore

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSnapshotValuesAreWhatRangeReturns(t *testing.T) {
	repo, b, _ := openTestBranch(t)
	ctx := context.Background()
	values := map[string]string{
		"/core/configmaps/default/json":  `{"a":{"b":[1,2]},"c":"d"}` + "\n",
		"/core/configmaps/default/yaml":  "a: b\nc: d\n",
		"/core/configmaps/default/raw":   "\x00binary",
		"/apps/deployments/default/web":  `{"spec":{"replicas":3}}`,
		"/core/namespaces/kube-system":   `{"metadata":{"name":"kube-system"}}`,
		"/odd keys/with spaces/.and.dot": `{}`,
	}
	for k, v := range values {
		put(t, b, k, v)
	}
	leased, err := repo.LeaseGrant(7, 60)
	require.NoError(t, err)
	err = putLeased(ctx, b, "/core/events/default/e", "{}", leased.ID)
	require.NoError(t, err)

	snap, err := repo.Snapshot(b.Head())
	require.NoError(t, err)
	require.Len(t, snap, len(values), "git-held keys only: the leased key is not there")
	for k, v := range values {
		assert.Equal(t, v, string(snap[k]), k)
		assert.Equal(t, string(get(t, b, k, 0).Value), string(snap[k]), "%s: as Range returns it", k)
	}

	got, err := repo.Values(b.Head(), []string{"/core/configmaps/default/json", "/core/configmaps/default/missing", "/apps/deployments/default/web", "/nothing/here"})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{
		"/core/configmaps/default/json": []byte(values["/core/configmaps/default/json"]),
		"/apps/deployments/default/web": []byte(values["/apps/deployments/default/web"]),
	}, got)
}

func TestChangedKeysBetweenCommits(t *testing.T) {
	repo, b, _ := openTestBranch(t)
	put(t, b, "/core/configmaps/default/a", `{"v":1}`)
	put(t, b, "/core/configmaps/default/b", `{"v":1}`)
	put(t, b, "/core/configmaps/other/c", `{"v":1}`)
	from := b.Head()
	put(t, b, "/core/configmaps/default/a", `{"v":2}`)
	del(t, b, "/core/configmaps/other/c")
	put(t, b, "/apps/deployments/default/d", `{}`)

	keys, err := repo.ChangedKeys(from, b.Head())
	require.NoError(t, err)
	assert.Equal(t, []string{"/apps/deployments/default/d", "/core/configmaps/default/a", "/core/configmaps/other/c"}, keys)

	all, err := repo.ChangedKeys(plumbing.ZeroHash, b.Head())
	require.NoError(t, err)
	assert.Len(t, all, 3, "from the empty tree: every key")
	none, err := repo.ChangedKeys(b.Head(), b.Head())
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestMergeBaseAndIsAncestor(t *testing.T) {
	repo, main, side, dir := forkedPair(t)
	ctx := context.Background()
	fork := side.Head()
	put(t, main, "/m", "1")
	put(t, side, "/s", "1")
	put(t, side, "/s", "2")

	base, err := repo.MergeBase(main.Head(), side.Head())
	require.NoError(t, err)
	assert.Equal(t, fork, base)
	require.NoError(t, repo.Flush())
	assert.Equal(t, strings.TrimSpace(git(t, dir, "merge-base", main.Head().String(), side.Head().String())), base.String(), "as git says")

	for _, tc := range []struct {
		a, b plumbing.Hash
		want bool
	}{
		{fork, main.Head(), true},
		{fork, side.Head(), true},
		{main.Head(), side.Head(), false},
		{side.Head(), main.Head(), false},
		{main.Head(), main.Head(), true},
		{main.Head(), fork, false},
	} {
		got, err := repo.IsAncestor(tc.a, tc.b)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%s ancestor of %s", tc.a, tc.b)
	}

	// After merging side into main, side's head is an ancestor of main's,
	// and the merge base of the pair is side's head.
	_, err = main.Merge(ctx, MergeRequest{ExpectedHead: main.Head(), SecondParent: side.Head(), Puts: map[string][]byte{"/s": []byte("2")}})
	require.NoError(t, err)
	ok, err := repo.IsAncestor(side.Head(), main.Head())
	require.NoError(t, err)
	assert.True(t, ok)
	base, err = repo.MergeBase(side.Head(), main.Head())
	require.NoError(t, err)
	assert.Equal(t, side.Head(), base)

	// Merging back the other way, then writing on both sides: the base is
	// the last merge's second parent, as git says.
	_, err = side.Merge(ctx, MergeRequest{ExpectedHead: side.Head(), SecondParent: main.Head(), Puts: map[string][]byte{"/m": []byte("1")}})
	require.NoError(t, err)
	put(t, main, "/m", "2")
	put(t, side, "/s", "3")
	base, err = repo.MergeBase(main.Head(), side.Head())
	require.NoError(t, err)
	require.NoError(t, repo.Flush())
	assert.Equal(t, strings.TrimSpace(git(t, dir, "merge-base", main.Head().String(), side.Head().String())), base.String())

	// Unrelated histories have no base.
	other, err := repo.Branch(ctx, "other")
	require.NoError(t, err)
	put(t, other, "/o", "1")
	base, err = repo.MergeBase(main.Head(), other.Head())
	require.NoError(t, err)
	assert.True(t, base.IsZero())
}

func TestMergeBaseOfCrissCrossIsOneOfGits(t *testing.T) {
	repo, main, side, dir := forkedPair(t)
	ctx := context.Background()
	put(t, main, "/m", "1")
	put(t, side, "/s", "1")
	mh, sh := main.Head(), side.Head()
	// Both merge each other's old heads at once.
	_, err := main.Merge(ctx, MergeRequest{ExpectedHead: mh, SecondParent: sh, Puts: map[string][]byte{"/s": []byte("1")}})
	require.NoError(t, err)
	_, err = side.Merge(ctx, MergeRequest{ExpectedHead: sh, SecondParent: mh, Puts: map[string][]byte{"/m": []byte("1")}})
	require.NoError(t, err)

	bases, err := repo.mergeBases(main.Head(), side.Head())
	require.NoError(t, err)
	require.NoError(t, repo.Flush())
	gitBases := strings.Fields(git(t, dir, "merge-base", "--all", main.Head().String(), side.Head().String()))
	var got []string
	for _, b := range bases {
		got = append(got, b.String())
	}
	assert.ElementsMatch(t, gitBases, got)
}
