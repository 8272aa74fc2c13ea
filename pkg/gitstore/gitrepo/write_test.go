package gitrepo

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

func TestWriteIsReadableByStorerAndGit(t *testing.T) {
	r := openTemp(t)
	h := commitFiles(t, r, map[string]string{"a.json": `{"a":1}`, "b.json": "b"}, "first\n")

	c, err := object.GetCommit(r.Storer(), h)
	require.NoError(t, err)
	require.Equal(t, "first\n", c.Message)
	f, err := c.File("a.json")
	require.NoError(t, err)
	content, err := f.Contents()
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, content)

	fsck(t, r.Dir())
	require.Equal(t, `{"a":1}`, git(t, r.Dir(), "cat-file", "-p", "main:a.json"))
	require.Equal(t, "first", git(t, r.Dir(), "log", "--format=%s", "main"))
	require.Equal(t, h.String(), git(t, r.Dir(), "rev-parse", "main"))
}

func TestWriteOnePackPerBatch(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	var parent plumbing.Hash
	for i := range 16 {
		parent = addCommit(t, b, parent, files(i+1, "f"), "c\n")
	}
	require.NoError(t, r.Write(b))
	require.Equal(t, 1, packCount(t, r))
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, parent, plumbing.ZeroHash))
	require.Equal(t, "16", git(t, r.Dir(), "rev-list", "--count", "main"))
	fsck(t, r.Dir())
}

func TestWriteSkipsStoredObjects(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	blob := b.AddBlob([]byte("same"))
	require.NoError(t, r.Write(b))
	require.Equal(t, 1, packCount(t, r))

	again := r.NewBatch()
	require.Equal(t, blob, again.AddBlob([]byte("same")))
	require.Equal(t, blob, again.AddBlob([]byte("same")))
	require.Equal(t, 1, again.Len())
	require.NoError(t, r.Write(again))
	require.NoError(t, r.Write(r.NewBatch()))
	require.Equal(t, 1, packCount(t, r), "nothing new: no pack")
}

func TestWriteLargeObject(t *testing.T) {
	r := openTemp(t)
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(i * 7 % 251)
	}
	b := r.NewBatch()
	h := b.AddBlob(big)
	require.NoError(t, r.Write(b))
	o, err := r.Storer().EncodedObject(plumbing.BlobObject, h)
	require.NoError(t, err)
	rd, err := o.Reader()
	require.NoError(t, err)
	got, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Equal(t, big, got)
	require.Equal(t, int64(len(big)), o.Size())
	require.Equal(t, h.String(), git(t, r.Dir(), "rev-parse", h.String()+"^{blob}"))
}

func TestStorerReportsMissingAndWrongType(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	h := b.AddBlob([]byte("x"))
	require.NoError(t, r.Write(b))
	s := r.Storer()

	_, err := s.EncodedObject(plumbing.CommitObject, h)
	require.Equal(t, plumbing.ErrObjectNotFound, err, "go-git compares with ==")
	_, err = s.EncodedObject(plumbing.AnyObject, plumbing.NewHash("0123456789012345678901234567890123456789"))
	require.Equal(t, plumbing.ErrObjectNotFound, err)
	require.NoError(t, s.HasEncodedObject(h))
	require.Equal(t, plumbing.ErrObjectNotFound, s.HasEncodedObject(plumbing.NewHash("0123456789012345678901234567890123456789")))
	size, err := s.EncodedObjectSize(h)
	require.NoError(t, err)
	require.Equal(t, int64(1), size)
	_, err = s.SetEncodedObject(&plumbing.MemoryObject{})
	require.ErrorIs(t, err, ErrReadOnly)
}

func TestIterEncodedObjects(t *testing.T) {
	r := openTemp(t)
	commitFiles(t, r, map[string]string{"a": "1", "b": "2"}, "m\n")
	it, err := r.Storer().IterEncodedObjects(plumbing.BlobObject)
	require.NoError(t, err)
	n := 0
	require.NoError(t, it.ForEach(func(o plumbing.EncodedObject) error {
		require.Equal(t, plumbing.BlobObject, o.Type())
		n++
		return nil
	}))
	require.Equal(t, 2, n)
}

func TestWriteAfterCloseFails(t *testing.T) {
	r := openTemp(t)
	require.NoError(t, r.Close())
	b := r.NewBatch()
	b.AddBlob([]byte("x"))
	require.ErrorIs(t, r.Write(b), ErrClosed)
	_, err := r.Storer().EncodedObject(plumbing.AnyObject, plumbing.ZeroHash)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, r.Close(), "Close is idempotent")
}

// Like git, relying on a stored object freshens its pack, so that git gc
// does not prune it as old and unreachable just before a ref names it.
func TestWriteFreshensPacksItDedupesAgainst(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	b.AddBlob([]byte("x"))
	require.NoError(t, r.Write(b))
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	path := packPath(r.packDir, sums[0], ".pack")
	old := time.Now().Add(-30 * 24 * time.Hour)
	require.NoError(t, os.Chtimes(path, old, old))

	again := r.NewBatch()
	again.AddBlob([]byte("x"))
	require.NoError(t, r.Write(again))
	require.Equal(t, 1, packCount(t, r))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), fi.ModTime(), time.Minute)
}

// A pack git gc removed (with --prune=now) no longer counts as storage.
func TestWriteRewritesObjectsOfRemovedPacks(t *testing.T) {
	r := openTemp(t)
	b := r.NewBatch()
	x := b.AddBlob([]byte("x"))
	require.NoError(t, r.Write(b))
	git(t, r.Dir(), "gc", "-q", "--prune=now") // x is unreachable: gone
	require.Equal(t, 0, packCount(t, r))

	again := r.NewBatch()
	again.AddBlob([]byte("x"))
	require.NoError(t, r.Write(again))
	git(t, r.Dir(), "cat-file", "-e", x.String())
}
