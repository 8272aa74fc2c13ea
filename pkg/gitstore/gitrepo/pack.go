package gitrepo

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash"
	"hash/crc32"
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

// packWriter streams a pack into a temporary file.
type packWriter struct {
	dir     string
	f       *os.File
	w       *bufio.Writer
	sum     hash.Hash // of everything written; the pack's trailer and name
	off     int64
	count   int
	entries []idxEntry
}

// newPackWriter starts a pack of count objects in packDir.
func newPackWriter(packDir string, count int) (*packWriter, error) {
	f, err := os.CreateTemp(packDir, tmpPackPrefix)
	if err != nil {
		return nil, err
	}
	pw := &packWriter{dir: packDir, f: f, sum: sha1.New(), count: count,
		entries: make([]idxEntry, 0, count)}
	pw.w = bufio.NewWriterSize(f, 256<<10)
	hdr := binary.BigEndian.AppendUint32([]byte("PACK\x00\x00\x00\x02"), uint32(count))
	if err := pw.write(hdr); err != nil {
		pw.abort()
		return nil, err
	}
	return pw, nil
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

// abort removes the temporary file.
func (pw *packWriter) abort() {
	pw.f.Close()
	os.Remove(pw.f.Name())
}

// finish completes the pack and its index and makes them durable under
// their final names: both files fsynced, the index renamed first and the
// pack last (the pack's name is what go-git lists; git lists indexes but
// ignores one without its pack), then the directory fsynced.
func (pw *packWriter) finish() (p *pack, err error) {
	defer func() {
		if err != nil {
			pw.abort()
		}
	}()
	if len(pw.entries) != pw.count {
		return nil, fmt.Errorf("gitrepo: pack of %d objects got %d", pw.count, len(pw.entries))
	}
	var sum plumbing.Hash
	copy(sum[:], pw.sum.Sum(nil))
	if _, err := pw.w.Write(sum[:]); err != nil {
		return nil, err
	}
	if err := pw.w.Flush(); err != nil {
		return nil, err
	}
	idxData := encodeIndex(pw.entries, sum)
	idx, err := decodeIndex(idxData)
	if err != nil {
		return nil, err
	}
	if err := pw.f.Chmod(0o444); err != nil {
		return nil, err
	}
	// Two fsyncs at once cost little more than one (README.md).
	packSynced := make(chan error, 1)
	go func() { packSynced <- pw.f.Sync() }()
	idxTmp, err := writeTemp(pw.dir, tmpIdxPrefix, idxData)
	if serr := <-packSynced; err == nil && serr != nil {
		os.Remove(idxTmp)
		err = serr
	}
	if err != nil {
		return nil, err
	}
	defer os.Remove(idxTmp) // no-op after the rename
	// Open for reading before the rename: once renamed, Maintain may
	// merge and remove the pack before we return.
	rf, err := os.Open(pw.f.Name())
	if err != nil {
		return nil, err
	}
	err = os.Rename(idxTmp, packPath(pw.dir, sum, ".idx"))
	if err == nil {
		err = os.Rename(pw.f.Name(), packPath(pw.dir, sum, ".pack"))
	}
	if err == nil {
		err = syncDir(pw.dir)
	}
	if err != nil {
		rf.Close()
		return nil, err
	}
	pw.f.Close()
	return &pack{sum: sum, idx: idx, f: rf, size: pw.off + hashLen}, nil
}

// writeTemp writes data to a new fsynced temporary file in dir.
func writeTemp(dir, prefix string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o444) // packs and indexes are read-only in git
	}
	if err == nil {
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
