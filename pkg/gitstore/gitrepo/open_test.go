package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func TestOpenCreatesBareRepositoryGitAccepts(t *testing.T) {
	for name, prepare := range map[string]func(dir string){
		"missing": func(string) {},
		"empty":   func(dir string) { require.NoError(t, os.Mkdir(dir, 0o755)) },
		"interrupted init": func(dir string) {
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "objects"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), nil, 0o644))
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "r.git")
			prepare(dir)
			r, err := Open(dir)
			require.NoError(t, err)
			defer r.Close()
			require.Equal(t, "true", git(t, dir, "rev-parse", "--is-bare-repository"))
			require.Equal(t, "refs/heads/main", git(t, dir, "symbolic-ref", "HEAD"))
			for _, d := range []string{"objects/pack", "objects/info", "refs/heads", "refs/tags"} {
				fi, err := os.Stat(filepath.Join(dir, d))
				require.NoError(t, err)
				require.True(t, fi.IsDir())
			}
		})
	}
}

func TestOpenExistingRepository(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r.git")
	git(t, t.TempDir(), "init", "--bare", "-q", dir)
	r, err := Open(dir)
	require.NoError(t, err)
	h := commitFiles(t, r, map[string]string{"a": "b"}, "m\n")
	require.NoError(t, r.Close())

	r, err = Open(dir)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.NoError(t, r.Storer().HasEncodedObject(h))
}

func TestOpenRefusesOtherDirectories(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o644))
	_, err := Open(dir)
	require.ErrorIs(t, err, ErrNotRepository)
}

func TestOpenTwiceIsRefused(t *testing.T) {
	r := openTemp(t)
	_, err := Open(r.Dir())
	require.ErrorIs(t, err, ErrInUse)
	require.NoError(t, r.Close())
	r2, err := Open(r.Dir())
	require.NoError(t, err)
	require.NoError(t, r2.Close())
}

func TestOpenRemovesLeftoversOfACrash(t *testing.T) {
	r := openTemp(t)
	h := commitFiles(t, r, map[string]string{"a": "b"}, "m\n")
	dir := r.Dir()
	require.NoError(t, r.Close())

	orphanIdx := packPath(filepath.Join(dir, "objects/pack"), testHash(1), ".idx")
	ours := []string{
		filepath.Join(dir, "objects/pack", tmpPackPrefix+"123"),
		filepath.Join(dir, "objects/pack", tmpIdxPrefix+"123"),
		filepath.Join(dir, tmpPrefix+"file_1"),
		orphanIdx,
		filepath.Join(dir, "refs/heads/main.lock"),
		filepath.Join(dir, "refs/heads/team/x.lock"),
		filepath.Join(dir, "packed-refs.lock"),
	}
	gits := []string{
		filepath.Join(dir, "objects/pack/tmp_pack_abc"), // a push in progress
		packPath(filepath.Join(dir, "objects/pack"), testHash(2), ".pack"),
	}
	for _, p := range append(ours, gits...) {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("partial"), 0o644))
	}
	// place cut short between its renames: our .keep and a pack without
	// its index go; a pack git keeps stays.
	packDir := filepath.Join(dir, "objects/pack")
	ourKeep, ourPack := packPath(packDir, testHash(3), ".keep"), packPath(packDir, testHash(3), ".pack")
	require.NoError(t, os.WriteFile(ourKeep, []byte("PACK\x00\x00\x00\x02"), 0o444)) // a link to the pack
	require.NoError(t, os.WriteFile(ourPack, []byte("PACK"), 0o444))
	ours = append(ours, ourKeep, ourPack)
	gitsKeep := packPath(packDir, testHash(4), ".keep")
	require.NoError(t, os.WriteFile(gitsKeep, []byte("receive-pack 123 on host\n"), 0o444))
	require.NoError(t, os.WriteFile(packPath(packDir, testHash(4), ".pack"), []byte("PACK"), 0o444))
	gits = append(gits, gitsKeep, packPath(packDir, testHash(4), ".pack"))

	r, err := Open(dir)
	require.NoError(t, err)
	defer r.Close()
	for _, p := range ours {
		_, err := os.Stat(p)
		require.True(t, os.IsNotExist(err), "%s removed", p)
	}
	for _, p := range gits {
		_, err := os.Stat(p)
		require.NoError(t, err, "%s kept", p)
	}
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, h, got)
	require.NoError(t, r.Storer().HasEncodedObject(h))
}
