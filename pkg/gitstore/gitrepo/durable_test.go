package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMkdirAllDurable(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "file"), nil, 0o644))
	for _, tc := range []struct {
		name, dir string
		ok        bool
	}{
		{"nested", "a/b/c", true},
		{"existing", "a/b", true},
		{"file in the way", "file/x", false},
		{"file itself", "file", false},
		{"outside root", "../elsewhere", false},
		{"root itself", ".", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := mkdirAllDurable(root, filepath.Join(root, tc.dir))
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			fi, err := os.Stat(filepath.Join(root, tc.dir))
			require.NoError(t, err)
			require.True(t, fi.IsDir())
		})
	}
}

func TestWriteFileDurableReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "HEAD")
	require.NoError(t, writeFileDurable(path, []byte("one")))
	require.NoError(t, writeFileDurable(path, []byte("two")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two", string(got))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "no temporary file left")
}
