package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/klauspost/compress/zlib"
)

// The pack entry format (gitformat-pack(5)): a header holding the type
// and the inflated size as a little-endian base-128 varint, for an
// OFS_DELTA the distance back to its base in git's own varint, for a
// REF_DELTA the base's name, then the zlib stream.

var errBadPack = errors.New("gitrepo: malformed pack")

// deflater compresses entries with zlib's fastest real compression
// (BenchmarkCompress, README.md), klauspost/compress's: 25-35 % less CPU
// than the standard library's for the store's objects (README.md). Deltas keep the big trees, which
// compress poorly and slowly, mostly out of the pack.
var deflater = &deflaterPool{level: zlib.BestSpeed}

// storingDeflater writes zlib streams of stored (uncompressed) blocks.
var storingDeflater = &deflaterPool{level: zlib.NoCompression}

// isStored reports whether a zlib stream starts with a stored block
// (after the 2-byte header, a block's type is bits 1-2 of its first byte).
func isStored(z []byte) bool { return len(z) > 2 && z[2]>>1&3 == 0 }

// appendEntryHeader appends an entry's type and inflated size.
func appendEntryHeader(dst []byte, t plumbing.ObjectType, size int64) []byte {
	c := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	for size > 0 {
		dst = append(dst, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(dst, c)
}

// parseEntryHeader returns the type and inflated size of an entry, and the
// length of its header.
func parseEntryHeader(b []byte) (plumbing.ObjectType, int64, int, error) {
	if len(b) == 0 {
		return 0, 0, 0, fmt.Errorf("%w: empty entry", errBadPack)
	}
	c := b[0]
	t := plumbing.ObjectType((c >> 4) & 7)
	size := int64(c & 0x0f)
	shift := uint(4)
	n := 1
	for c&0x80 != 0 {
		if n >= len(b) || shift > 56 {
			return 0, 0, 0, fmt.Errorf("%w: bad entry header", errBadPack)
		}
		c = b[n]
		n++
		size |= int64(c&0x7f) << shift
		shift += 7
	}
	return t, size, n, nil
}

// appendOfsDelta appends the distance from an OFS_DELTA entry back to its
// base, in git's encoding (each continuation byte also adds one, so that
// every value has exactly one encoding).
func appendOfsDelta(dst []byte, dist int64) []byte {
	var buf [10]byte
	i := len(buf) - 1
	buf[i] = byte(dist & 0x7f)
	for dist >>= 7; dist > 0; dist >>= 7 {
		dist--
		i--
		buf[i] = 0x80 | byte(dist&0x7f)
	}
	return append(dst, buf[i:]...)
}

func parseOfsDelta(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, fmt.Errorf("%w: truncated delta offset", errBadPack)
	}
	c := b[0]
	dist := int64(c & 0x7f)
	n := 1
	for c&0x80 != 0 {
		if n >= len(b) || dist >= 1<<55 {
			return 0, 0, fmt.Errorf("%w: bad delta offset", errBadPack)
		}
		c = b[n]
		n++
		dist = (dist+1)<<7 | int64(c&0x7f)
	}
	return dist, n, nil
}

// deflaterPool reuses zlib writers of one level: their state is large
// (~1 MB for BestSpeed).
type deflaterPool struct {
	level int
	pool  sync.Pool
}

// appendDeflated appends the zlib stream of data to dst.
func (p *deflaterPool) appendDeflated(dst, data []byte) []byte {
	buf := bytes.NewBuffer(dst)
	zw, _ := p.pool.Get().(*zlib.Writer)
	if zw == nil {
		zw, _ = zlib.NewWriterLevel(buf, p.level) // level is valid
	} else {
		zw.Reset(buf)
	}
	zw.Write(data) // writes to a bytes.Buffer do not fail
	zw.Close()
	p.pool.Put(zw)
	return buf.Bytes()
}

var inflaters sync.Pool // of io.ReadCloser implementing zlib.Resetter

// inflate returns the size bytes held by the zlib stream in b.
func inflate(b []byte, size int64) ([]byte, error) {
	// Deflate cannot compress more than 1032:1, so a larger size is
	// corruption, and must not turn into a huge allocation.
	if size > int64(len(b))*1032+64 {
		return nil, fmt.Errorf("%w: size %d from %d compressed bytes", errBadPack, size, len(b))
	}
	zr, err := getInflater(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadPack, err)
	}
	defer inflaters.Put(zr)
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", errBadPack, err)
	}
	// Reading to the end checks the stream's checksum and its length.
	if n, err := io.ReadFull(zr, make([]byte, 1)); n != 0 || err != io.EOF {
		return nil, fmt.Errorf("%w: inflate: stream longer than %d bytes or damaged: %v", errBadPack, size, err)
	}
	return out, nil
}

func getInflater(r io.Reader) (io.ReadCloser, error) {
	if zr, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := zr.(zlib.Resetter).Reset(r, nil); err != nil {
			return nil, err
		}
		return zr, nil
	}
	return zlib.NewReader(r)
}
