package gitrepo

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
)

// Names in objects/pack. Git finds packs by their .idx and ignores other
// names; temporary files carry our prefix so that Open removes only ours,
// never the tmp_pack_* of a git receiving a push at the same time.
const (
	tmpPrefix     = "tmp_heaven_"
	tmpPackPrefix = tmpPrefix + "pack_"
	tmpIdxPrefix  = tmpPrefix + "idx_"
)

func packPath(packDir string, sum plumbing.Hash, ext string) string {
	return filepath.Join(packDir, "pack-"+sum.String()+ext)
}

// packWriter streams a pack to w: header, entries, trailer. It collects
// what the index needs.
type packWriter struct {
	w       io.Writer
	sum     hash.Hash // of everything written; the pack's trailer and name
	off     int64
	count   int
	entries []idxEntry
}

// startPack writes the header of a pack of count objects to w.
func startPack(w io.Writer, count int) (*packWriter, error) {
	pw := &packWriter{w: w, sum: sha1.New(), count: count, entries: make([]idxEntry, 0, count)}
	hdr := binary.BigEndian.AppendUint32([]byte("PACK\x00\x00\x00\x02"), uint32(count))
	return pw, pw.write(hdr)
}

func (pw *packWriter) write(b []byte) error {
	pw.sum.Write(b)
	_, err := pw.w.Write(b)
	pw.off += int64(len(b))
	return err
}

// add appends one entry given in parts (its header, any delta base, the
// zlib stream).
func (pw *packWriter) add(h plumbing.Hash, parts ...[]byte) error {
	e := idxEntry{hash: h, offset: pw.off}
	for _, b := range parts {
		e.crc = crc32.Update(e.crc, crc32.IEEETable, b)
		if err := pw.write(b); err != nil {
			return err
		}
	}
	pw.entries = append(pw.entries, e)
	return nil
}

// end writes the trailer and returns the pack's checksum (its name).
func (pw *packWriter) end() (plumbing.Hash, error) {
	var sum plumbing.Hash
	if len(pw.entries) != pw.count {
		return sum, fmt.Errorf("gitrepo: pack of %d objects got %d", pw.count, len(pw.entries))
	}
	copy(sum[:], pw.sum.Sum(nil))
	_, err := pw.w.Write(sum[:])
	return sum, err
}

// size is the pack's length once ended.
func (pw *packWriter) size() int64 { return pw.off + hashLen }

// packFile is a pack streamed into a temporary file of packDir, for packs
// too large to hold in memory (Maintain's merges).
type packFile struct {
	*packWriter
	dir string
	f   *os.File
	buf *bufio.Writer
}

func createPackFile(packDir string, count int) (*packFile, error) {
	f, err := os.CreateTemp(packDir, tmpPackPrefix)
	if err != nil {
		return nil, err
	}
	pf := &packFile{dir: packDir, f: f, buf: bufio.NewWriterSize(f, 256<<10)}
	if pf.packWriter, err = startPack(pf.buf, count); err != nil {
		pf.abort()
		return nil, err
	}
	return pf, nil
}

// abort removes the temporary file.
func (pf *packFile) abort() {
	pf.f.Close()
	os.Remove(pf.f.Name())
}

// finish completes the pack and makes it and its index durable under
// their final names.
func (pf *packFile) finish() (*pack, error) {
	sum, err := pf.end()
	if err == nil {
		err = pf.buf.Flush()
	}
	if err != nil {
		pf.abort()
		return nil, err
	}
	t, err := stagePack(pf.dir, pf.f, pf.entries, sum, pf.size(), true)
	if err != nil {
		return nil, err
	}
	return t.place(true)
}

// packTemp is a complete pack and its index in temporary files, which
// git and our readers ignore until place names them.
type packTemp struct {
	dir       string
	pack, idx string // temporary names
	sum       plumbing.Hash
	index     *index
	size      int64
	unkeep    func() // removes the .keep taken by keep; nil before keep and after release
}

// stagePack completes a pack written to the temporary file f: it closes
// f, makes it read-only as git does, and writes the index beside it. When
// durable, both are fsynced. On failure it removes both.
func stagePack(dir string, f *os.File, entries []idxEntry, sum plumbing.Hash, size int64, durable bool) (t *packTemp, err error) {
	t = &packTemp{dir: dir, pack: f.Name(), sum: sum, size: size}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.remove()
			t = nil
		}
	}()
	idxData := encodeIndex(entries, sum)
	if t.index, err = decodeIndex(idxData); err != nil {
		return t, err
	}
	if err := f.Chmod(0o444); err != nil {
		return t, err
	}
	// Two fsyncs at once cost little more than one (README.md).
	packSynced := make(chan error, 1)
	if durable {
		go func() { packSynced <- f.Sync() }()
	} else {
		packSynced <- nil
	}
	t.idx, err = writeTemp(dir, tmpIdxPrefix, idxData, durable)
	if serr := <-packSynced; err == nil {
		err = serr
	}
	return t, err
}

// place gives the files their final names: the pack first and the index
// last, as git does, under a .keep file, as git's index-pack keeps a
// pushed pack. Both orders have a moment when one name is there without
// the other, and git gc acts on each: it deletes an index without its
// pack (garbage to git), and git repack, which lists packs by their .pack
// files, deletes a pack it listed without an index once its new pack is
// written, unless the pack is kept. Readers (git's and ours) find packs by
// their index, so the pack is invisible until both names are there. When
// durable, the directory is fsynced after; otherwise the caller's journal
// makes them recoverable. It returns the pack opened, not yet visible to
// readers (addPack).
func (t *packTemp) place(durable bool) (*pack, error) {
	// Open for reading before the rename: once named, Maintain may merge
	// and remove the pack before we return.
	rf, err := os.Open(t.pack)
	if err == nil {
		err = t.keep()
	}
	if err == nil {
		err = os.Rename(t.pack, packPath(t.dir, t.sum, ".pack"))
	}
	if err == nil {
		if betweenPackRenames != nil {
			betweenPackRenames()
		}
		// A failure here leaves a pack without its index, which no
		// reader sees and git gc removes once it is not kept: it may be
		// an intact copy written before, and the journal writes it
		// again if needed.
		err = os.Rename(t.idx, packPath(t.dir, t.sum, ".idx"))
	}
	if err == nil && durable {
		err = syncDir(t.dir)
	}
	if err != nil {
		if rf != nil {
			rf.Close()
		}
		t.remove()
		return nil, err
	}
	t.release() // whole now: git repack includes its objects before removing it
	return &pack{sum: t.sum, idx: t.index, f: rf, size: t.size}, nil
}

// keep creates the pack's .keep for place's renames.
func (t *packTemp) keep() error {
	unkeep, err := keepPack(t.dir, t.pack, t.sum)
	t.unkeep = unkeep
	return err
}

// release removes the .keep taken by keep.
func (t *packTemp) release() {
	if t.unkeep != nil {
		t.unkeep()
		t.unkeep = nil
	}
}

// keepPack makes pack-<sum>.keep a hard link to the pack's temporary
// file, and returns what removes it. Git only asks whether a .keep exists;
// a link costs no inode, and Open tells ours (a crash's) from git's or an
// operator's by its content, a pack (isPackFile). A .keep there already
// (theirs, or ours for the same pack written again at the same time) is
// left as it is.
func keepPack(dir, tmpPack string, sum plumbing.Hash) (func(), error) {
	path := packPath(dir, sum, ".keep")
	err := os.Link(tmpPack, path)
	if errors.Is(err, fs.ErrExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}

// betweenPackRenames, when set by a test, runs between the renames of a
// pack and its index.
var betweenPackRenames func()

// remove deletes the temporary files not renamed yet, and the .keep.
func (t *packTemp) remove() {
	t.release()
	if t.idx != "" {
		os.Remove(t.idx)
	}
	os.Remove(t.pack)
}

// writeTemp writes data to a new temporary file in dir, fsynced if
// durable.
func writeTemp(dir, prefix string, data []byte, durable bool) (string, error) {
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o444) // packs and indexes are read-only in git
	}
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}
