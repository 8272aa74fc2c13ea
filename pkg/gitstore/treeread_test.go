package gitstore

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

func TestParseTreeRoundTrip(t *testing.T) {
	entries := []object.TreeEntry{
		{Name: "a.json", Mode: filemode.Regular, Hash: plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")},
		{Name: "core", Mode: filemode.Dir, Hash: plumbing.NewHash("89abcdef0123456789abcdef0123456789abcdef")},
	}
	data, err := gitrepo.AppendTree(nil, entries)
	require.NoError(t, err)
	got, err := parseTree(data)
	require.NoError(t, err)
	require.Equal(t, entries, got)

	for _, bad := range []string{"100644 a", "100644 a\x00short", "10x644 a\x00" + string(make([]byte, 20))} {
		_, err := parseTree([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}
