package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// Our .idx must be the one git itself derives from our pack, byte for byte.
func TestPackIndexMatchesGitIndexPack(t *testing.T) {
	r := openTemp(t)
	commitFiles(t, r, files(300, "x"), "m\n")
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	require.Len(t, sums, 1)
	packFile := packPath(r.packDir, sums[0], ".pack")

	theirs := filepath.Join(t.TempDir(), "git.idx")
	out := git(t, r.Dir(), "index-pack", "-o", theirs, packFile)
	require.Equal(t, sums[0].String(), out, "git names the pack by its checksum too")
	want, err := os.ReadFile(theirs)
	require.NoError(t, err)
	got, err := os.ReadFile(packPath(r.packDir, sums[0], ".idx"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	git(t, r.Dir(), "verify-pack", packPath(r.packDir, sums[0], ".idx"))
}

func TestPackFilesAreReadOnlyAndNoTempFilesRemain(t *testing.T) {
	r := openTemp(t)
	commitFiles(t, r, files(3, "x"), "m\n")
	ents, err := os.ReadDir(r.packDir)
	require.NoError(t, err)
	require.Len(t, ents, 2)
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o444), fi.Mode().Perm(), e.Name())
	}
}

func TestOpenPackRejectsMismatchedIndex(t *testing.T) {
	r := openTemp(t)
	commitFiles(t, r, files(3, "x"), "m\n")
	commitFiles(t, r, files(3, "y"), "m\n")
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	require.Len(t, sums, 2)
	// The index of one pack under the other's name.
	data, err := os.ReadFile(packPath(r.packDir, sums[0], ".idx"))
	require.NoError(t, err)
	dir := t.TempDir()
	for _, ext := range []string{".idx", ".pack"} {
		src := packPath(r.packDir, sums[1], ext)
		b, err := os.ReadFile(src)
		require.NoError(t, err)
		if ext == ".idx" {
			b = data
		}
		require.NoError(t, os.WriteFile(packPath(dir, sums[1], ext), b, 0o644))
	}
	_, err = openPack(dir, sums[1])
	require.ErrorIs(t, err, errBadIndex)
}

func TestPackEntryFormat(t *testing.T) {
	for _, tc := range []struct {
		t    plumbing.ObjectType
		size int64
	}{
		{plumbing.BlobObject, 0}, {plumbing.BlobObject, 15}, {plumbing.TreeObject, 16},
		{plumbing.CommitObject, 1<<11 - 1}, {plumbing.TagObject, 1 << 11}, {plumbing.BlobObject, 1<<40 + 3},
	} {
		b := appendEntryHeader(nil, tc.t, tc.size)
		typ, size, n, err := parseEntryHeader(append(b, 0xAA))
		require.NoError(t, err)
		require.Equal(t, tc.t, typ)
		require.Equal(t, tc.size, size)
		require.Equal(t, len(b), n)
	}
	for _, dist := range []int64{1, 127, 128, 16511, 16512, 1 << 30, 1<<40 + 1} {
		b := appendOfsDelta(nil, dist)
		got, n, err := parseOfsDelta(append(b, 0xAA))
		require.NoError(t, err)
		require.Equal(t, dist, got)
		require.Equal(t, len(b), n)
	}
	_, _, _, err := parseEntryHeader([]byte{0x80})
	require.ErrorIs(t, err, errBadPack)
	_, _, err = parseOfsDelta([]byte{0x80})
	require.ErrorIs(t, err, errBadPack)
}

func TestInflateRejectsDamage(t *testing.T) {
	data := []byte("hello, hello, hello")
	z := deflater.appendDeflated(nil, data)
	got, err := inflate(z, int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, data, got)

	_, err = inflate(z, int64(len(data))-1)
	require.ErrorIs(t, err, errBadPack, "stream longer than the header says")
	bad := append([]byte(nil), z...)
	bad[len(bad)-1] ^= 1
	_, err = inflate(bad, int64(len(data)))
	require.ErrorIs(t, err, errBadPack, "checksum")
	_, err = inflate(z, 1<<40)
	require.ErrorIs(t, err, errBadPack, "implausible size")
}
