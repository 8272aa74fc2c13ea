package gitrepo

import (
	"bytes"
	"cmp"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// A pack index, version 2 (gitformat-pack(5)):
//
//	magic "\377tOc", version 2, fanout [256]uint32,
//	names [n][20]byte (sorted), crc32 [n]uint32, offsets [n]uint32
//	(high bit set: index into the 64-bit table), offsets64 [m]uint64,
//	pack checksum, idx checksum.
//
// We keep the file's bytes and read them in place: no per-object
// allocation, and lookups never write, so any number of goroutines may
// share one index.

var idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

const (
	idxHeaderLen = 8 + 256*4
	hashLen      = 20
	largeOffset  = 1 << 31
)

var errBadIndex = errors.New("gitrepo: malformed pack index")

// index is a parsed .idx file.
type index struct {
	data     []byte
	n        int
	names    []byte // n*20
	crcs     []byte // n*4
	offsets  []byte // n*4
	offsets6 []byte // m*8
	// byOffset lists entry positions in pack order, to find where an
	// entry ends (the next entry's start) and to copy packs in order.
	byOffset []uint32
}

// decodeIndex parses and checks an .idx file.
func decodeIndex(data []byte) (*index, error) {
	if len(data) < idxHeaderLen+2*hashLen || !bytes.Equal(data[:8], idxMagic) {
		return nil, fmt.Errorf("%w: bad header", errBadIndex)
	}
	sum := sha1.Sum(data[:len(data)-hashLen])
	if !bytes.Equal(sum[:], data[len(data)-hashLen:]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errBadIndex)
	}
	x := &index{data: data, n: int(binary.BigEndian.Uint32(data[8+255*4:]))}
	prev := uint32(0)
	for i := range 256 {
		v := binary.BigEndian.Uint32(data[8+i*4:])
		if v < prev {
			return nil, fmt.Errorf("%w: fanout not monotonic", errBadIndex)
		}
		prev = v
	}
	p := idxHeaderLen
	tables := x.n * (hashLen + 4 + 4)
	if len(data) < p+tables+2*hashLen {
		return nil, fmt.Errorf("%w: truncated", errBadIndex)
	}
	x.names = data[p : p+x.n*hashLen]
	p += x.n * hashLen
	x.crcs = data[p : p+x.n*4]
	p += x.n * 4
	x.offsets = data[p : p+x.n*4]
	p += x.n * 4
	x.offsets6 = data[p : len(data)-2*hashLen]
	if len(x.offsets6)%8 != 0 {
		return nil, fmt.Errorf("%w: bad 64-bit offset table", errBadIndex)
	}
	if err := x.sortByOffset(); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *index) sortByOffset() error {
	x.byOffset = make([]uint32, x.n)
	for i := range x.byOffset {
		x.byOffset[i] = uint32(i)
		o := binary.BigEndian.Uint32(x.offsets[i*4:])
		if o&largeOffset != 0 && int(o&^largeOffset)*8+8 > len(x.offsets6) {
			return fmt.Errorf("%w: 64-bit offset out of range", errBadIndex)
		}
	}
	slices.SortFunc(x.byOffset, func(a, b uint32) int {
		return cmp.Compare(x.offset(int(a)), x.offset(int(b)))
	})
	return nil
}

// packChecksum is the checksum of the pack this index describes, which is
// also the pack's name.
func (x *index) packChecksum() plumbing.Hash {
	var h plumbing.Hash
	copy(h[:], x.data[len(x.data)-2*hashLen:])
	return h
}

func (x *index) hash(i int) plumbing.Hash {
	var h plumbing.Hash
	copy(h[:], x.names[i*hashLen:])
	return h
}

func (x *index) crc(i int) uint32 { return binary.BigEndian.Uint32(x.crcs[i*4:]) }

func (x *index) offset(i int) int64 {
	o := binary.BigEndian.Uint32(x.offsets[i*4:])
	if o&largeOffset == 0 {
		return int64(o)
	}
	return int64(binary.BigEndian.Uint64(x.offsets6[(o&^largeOffset)*8:]))
}

// find returns the position of h, or -1.
func (x *index) find(h plumbing.Hash) int {
	lo := 0
	if h[0] > 0 {
		lo = int(binary.BigEndian.Uint32(x.data[8+(int(h[0])-1)*4:]))
	}
	hi := int(binary.BigEndian.Uint32(x.data[8+int(h[0])*4:]))
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch bytes.Compare(x.names[mid*hashLen:mid*hashLen+hashLen], h[:]) {
		case 0:
			return mid
		case -1:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return -1
}

// atOffset returns the rank, in pack order, of the entry starting at off.
func (x *index) atOffset(off int64) (int, bool) {
	return slices.BinarySearchFunc(x.byOffset, off, func(i uint32, o int64) int {
		return cmp.Compare(x.offset(int(i)), o)
	})
}

// entryEnd returns where the entry starting at off ends: at the next
// entry, or at the pack's trailing checksum.
func (x *index) entryEnd(off, packSize int64) int64 {
	k, _ := x.atOffset(off)
	if k+1 < len(x.byOffset) {
		return x.offset(int(x.byOffset[k+1]))
	}
	return packSize - hashLen
}

// hashAtOffset returns the name of the entry starting at off.
func (x *index) hashAtOffset(off int64) (plumbing.Hash, bool) {
	k, ok := x.atOffset(off)
	if !ok {
		return plumbing.ZeroHash, false
	}
	return x.hash(int(x.byOffset[k])), true
}

// idxEntry is one object of a pack being written.
type idxEntry struct {
	hash   plumbing.Hash
	offset int64
	crc    uint32
}

// encodeIndex returns the .idx file for a pack with the given entries and
// checksum (entries in any order: it sorts a copy by name).
func encodeIndex(entries []idxEntry, packSum plumbing.Hash) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b idxEntry) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	n := len(entries)
	large := 0
	for _, e := range entries {
		if e.offset >= largeOffset {
			large++
		}
	}
	buf := make([]byte, 0, idxHeaderLen+n*(hashLen+8)+large*8+2*hashLen)
	buf = append(buf, idxMagic...)
	var fanout [256]uint32
	for _, e := range entries {
		fanout[e.hash[0]]++
	}
	total := uint32(0)
	for _, c := range fanout {
		total += c
		buf = binary.BigEndian.AppendUint32(buf, total)
	}
	for _, e := range entries {
		buf = append(buf, e.hash[:]...)
	}
	for _, e := range entries {
		buf = binary.BigEndian.AppendUint32(buf, e.crc)
	}
	nextLarge := uint32(0)
	for _, e := range entries {
		if e.offset < largeOffset {
			buf = binary.BigEndian.AppendUint32(buf, uint32(e.offset))
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, largeOffset|nextLarge)
		nextLarge++
	}
	for _, e := range entries {
		if e.offset >= largeOffset {
			buf = binary.BigEndian.AppendUint64(buf, uint64(e.offset))
		}
	}
	buf = append(buf, packSum[:]...)
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...)
}
