package gitrepo

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// pack is an open pack and its index. Reads use ReadAt only, so one pack
// serves any number of goroutines. Closing the file while a read is in
// flight is safe: os.File makes the read fail with os.ErrClosed, never
// read another file (and so does a held pack's memory).
type pack struct {
	sum  plumbing.Hash
	idx  *index
	f    packData
	size int64
	// held is set for a Commit's pack held in memory, not on disk yet
	// (held.go): readers find its objects, git does not.
	held *encodedPack
}

// packData is where a pack's bytes are read: its file, or memory.
type packData interface {
	io.ReaderAt
	Close() error
}

// openPack opens pack-<sum>.pack and its index. It returns an error
// satisfying errors.Is(err, fs.ErrNotExist) when either file is missing.
func openPack(packDir string, sum plumbing.Hash) (*pack, error) {
	data, err := os.ReadFile(packPath(packDir, sum, ".idx"))
	if err != nil {
		return nil, err
	}
	idx, err := decodeIndex(data)
	if err != nil {
		return nil, fmt.Errorf("pack-%s.idx: %w", sum, err)
	}
	if idx.packChecksum() != sum {
		return nil, fmt.Errorf("pack-%s.idx: %w: describes pack %s", sum, errBadIndex, idx.packChecksum())
	}
	f, err := os.Open(packPath(packDir, sum, ".pack"))
	if err != nil {
		return nil, err
	}
	p := &pack{sum: sum, idx: idx, f: f}
	if err := p.check(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("pack-%s.pack: %w", sum, err)
	}
	return p, nil
}

// check compares the pack's header and trailer, in f, with its index.
func (p *pack) check(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	p.size = fi.Size()
	var hdr [12]byte
	var trailer plumbing.Hash
	if p.size < int64(len(hdr)+hashLen) {
		return fmt.Errorf("%w: too short", errBadPack)
	}
	if _, err := p.f.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	if _, err := p.f.ReadAt(trailer[:], p.size-hashLen); err != nil {
		return err
	}
	if string(hdr[:8]) != "PACK\x00\x00\x00\x02" || trailer != p.sum ||
		int(uint32(hdr[8])<<24|uint32(hdr[9])<<16|uint32(hdr[10])<<8|uint32(hdr[11])) != p.idx.n {
		return fmt.Errorf("%w: header or trailer does not match the index", errBadPack)
	}
	return nil
}

// raw returns the bytes of the entry starting at off.
func (p *pack) raw(off int64) ([]byte, error) {
	end := p.idx.entryEnd(off, p.size)
	if off < 12 || end <= off || end > p.size-hashLen {
		return nil, fmt.Errorf("%w: entry at %d out of bounds", errBadPack, off)
	}
	buf := make([]byte, end-off)
	if _, err := p.f.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("pack-%s: %w", p.sum, err)
	}
	return buf, nil
}

// maxDeltaDepth bounds delta chains (git writes at most 4095) so that a
// damaged pack whose REF_DELTAs form a cycle cannot recurse forever.
const maxDeltaDepth = 10000

// readPacked decodes the object at off, resolving deltas. base looks up a
// REF_DELTA's base anywhere in the repository.
func (p *pack) readPacked(off int64, h plumbing.Hash, depth int, base func(plumbing.Hash, int) (*storedObject, error)) (*storedObject, error) {
	if depth > maxDeltaDepth {
		return nil, fmt.Errorf("%w: delta chain deeper than %d", errBadPack, maxDeltaDepth)
	}
	raw, err := p.raw(off)
	if err != nil {
		return nil, err
	}
	t, size, n, err := parseEntryHeader(raw)
	if err != nil {
		return nil, err
	}
	var b *storedObject
	switch t {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		data, err := inflate(raw[n:], size)
		if err != nil {
			return nil, err
		}
		return &storedObject{h: h, t: t, data: data}, nil
	case plumbing.OFSDeltaObject:
		dist, m, err := parseOfsDelta(raw[n:])
		if err != nil {
			return nil, err
		}
		bh, ok := p.idx.hashAtOffset(off - dist)
		if !ok {
			return nil, fmt.Errorf("%w: no delta base at %d", errBadPack, off-dist)
		}
		if b, err = base(bh, depth+1); err != nil {
			return nil, err
		}
		n += m
	case plumbing.REFDeltaObject:
		if len(raw) < n+hashLen {
			return nil, fmt.Errorf("%w: truncated delta", errBadPack)
		}
		var bh plumbing.Hash
		copy(bh[:], raw[n:])
		if b, err = base(bh, depth+1); err != nil {
			return nil, err
		}
		n += hashLen
	default:
		return nil, fmt.Errorf("%w: entry type %d", errBadPack, t)
	}
	delta, err := inflate(raw[n:], size)
	if err != nil {
		return nil, err
	}
	data, err := packfile.PatchDelta(b.data, delta)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errBadPack, h, err)
	}
	return &storedObject{h: h, t: b.t, data: data}, nil
}

// readLoose reads the loose object h at path (objects/xx/yyyy), or
// returns an error satisfying errors.Is(err, fs.ErrNotExist).
func readLoose(path string, h plumbing.Hash) (*storedObject, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	zr, err := getInflater(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	defer inflaters.Put(zr)
	content, err := io.ReadAll(io.LimitReader(zr, int64(len(data))*1032+64))
	if err != nil {
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	return parseLoose(h, content)
}

// parseLoose splits "<type> <size>\x00<content>".
func parseLoose(h plumbing.Hash, b []byte) (*storedObject, error) {
	sp := bytes.IndexByte(b, ' ')
	nul := bytes.IndexByte(b, 0)
	if sp < 0 || nul < sp {
		return nil, fmt.Errorf("loose object %s: bad header", h)
	}
	t, err := plumbing.ParseObjectType(string(b[:sp]))
	if err != nil {
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	size, err := strconv.Atoi(string(b[sp+1 : nul]))
	if err != nil || size != len(b)-nul-1 {
		return nil, fmt.Errorf("loose object %s: size does not match", h)
	}
	return &storedObject{h: h, t: t, data: b[nul+1:]}, nil
}
