package gitrepo

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/stretchr/testify/require"
)

func TestStorerReferences(t *testing.T) {
	r := openTemp(t)
	c1, c2 := twoCommits(t, r)
	s := r.Storer()

	require.NoError(t, s.SetReference(plumbing.NewHashReference(plumbing.Main, c1)))
	head, err := s.Reference(plumbing.HEAD)
	require.NoError(t, err)
	require.Equal(t, plumbing.SymbolicReference, head.Type())
	resolved, err := storer.ResolveReference(s, plumbing.HEAD)
	require.NoError(t, err)
	require.Equal(t, c1, resolved.Hash())

	stale := plumbing.NewHashReference(plumbing.Main, c2)
	err = s.CheckAndSetReference(plumbing.NewHashReference(plumbing.Main, c2), stale)
	require.ErrorIs(t, err, storage.ErrReferenceHasChanged)
	require.ErrorIs(t, err, ErrRefChanged)
	require.NoError(t, s.CheckAndSetReference(plumbing.NewHashReference(plumbing.Main, c2), plumbing.NewHashReference(plumbing.Main, c1)))

	require.NoError(t, s.SetReference(plumbing.NewHashReference("refs/tags/v1", c1)))
	it, err := s.IterReferences()
	require.NoError(t, err)
	var names []plumbing.ReferenceName
	require.NoError(t, it.ForEach(func(ref *plumbing.Reference) error {
		names = append(names, ref.Name())
		return nil
	}))
	require.Equal(t, []plumbing.ReferenceName{plumbing.HEAD, plumbing.Main, "refs/tags/v1"}, names)
	n, err := s.CountLooseRefs()
	require.NoError(t, err)
	require.Equal(t, 2, n)

	require.NoError(t, s.RemoveReference("refs/tags/v1"))
	_, err = s.Reference("refs/tags/v1")
	require.ErrorIs(t, err, plumbing.ErrReferenceNotFound)

	// go-git walks history through Storer.
	c, err := object.GetCommit(s, c2)
	require.NoError(t, err)
	var msgs []string
	require.NoError(t, object.NewCommitPreorderIter(c, nil, nil).ForEach(func(c *object.Commit) error {
		msgs = append(msgs, c.Message)
		return nil
	}))
	require.Equal(t, []string{"two\n", "one\n"}, msgs)
	fsck(t, r.Dir())
}
