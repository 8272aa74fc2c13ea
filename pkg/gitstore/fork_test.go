package gitstore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForkAtRevision(t *testing.T) {
	repo, parent, _ := openTestBranch(t)
	ctx := context.Background()
	r1 := put(t, parent, "/a", "1")
	put(t, parent, "/a", "2")
	put(t, parent, "/b", "x")

	for _, tc := range []struct {
		name    string
		rev     int64
		wantA   string
		wantB   bool
		wantRev int64
	}{
		{"at head", 0, "2", true, parent.Revision()},
		{"at an earlier revision", r1, "1", false, r1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "fork-" + map[bool]string{true: "head", false: "old"}[tc.rev == 0]
			_, at, err := repo.Fork(ctx, name, parent.Name(), tc.rev)
			require.NoError(t, err)
			assert.Equal(t, tc.wantRev, at)
			child, err := repo.Branch(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, tc.wantRev, child.Revision(), "a fork continues its parent's revisions")
			assert.Equal(t, tc.wantA, string(get(t, child, "/a", 0).Value))
			assert.Equal(t, tc.wantB, get(t, child, "/b", 0) != nil)
			put(t, child, "/only-child", "c")
			assert.Nil(t, get(t, parent, "/only-child", 0), "writes to a fork stay in the fork")
		})
	}

	_, _, err := repo.Fork(ctx, "fork-head", parent.Name(), 0)
	assert.True(t, errors.Is(err, ErrBranchExists), "%v", err)
	_, _, err = repo.Fork(ctx, "fork-future", parent.Name(), parent.Revision()+10)
	assert.True(t, errors.Is(err, ErrFutureRev), "%v", err)

	require.NoError(t, repo.DeleteBranch("fork-old"))
	head, _, err := repo.Head("fork-old")
	require.NoError(t, err)
	assert.True(t, head.IsZero(), "a deleted branch has no head")
}
