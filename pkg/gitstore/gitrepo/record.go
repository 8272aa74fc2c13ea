package gitrepo

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/go-git/go-git/v5/plumbing"
)

// record is one Commit in the journal: the ref move, and the pack exactly
// as Commit writes it, with its index entries so that recovery can write
// both again without decoding a single object.
type record struct {
	name     plumbing.ReferenceName
	old, new plumbing.Hash
	pack     encodedPack // empty: no new objects, or written durably already
}

// idxEntryLen is the size of an index entry in a record: name, offset,
// CRC-32.
const idxEntryLen = hashLen + 8 + 4

var errBadRecord = errors.New("malformed record")

// encode returns the record, with recordHeaderLen bytes left for the
// journal to fill, and the CRC-32C of its payload:
//
//	name length u16 | name | old | new | entry count u32 | entries | pack
func (rec *record) encode() ([]byte, uint32) {
	b := make([]byte, recordHeaderLen, recordHeaderLen+rec.payloadLen())
	b = binary.BigEndian.AppendUint16(b, uint16(len(rec.name)))
	b = append(b, rec.name...)
	b = append(b, rec.old[:]...)
	b = append(b, rec.new[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(rec.pack.entries)))
	for _, e := range rec.pack.entries {
		b = append(b, e.hash[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(e.offset))
		b = binary.BigEndian.AppendUint32(b, e.crc)
	}
	b = append(b, rec.pack.data...)
	return b, crc32.Checksum(b[recordHeaderLen:], castagnoli)
}

func (rec *record) payloadLen() int {
	return 2 + len(rec.name) + 2*hashLen + 4 + len(rec.pack.entries)*idxEntryLen + len(rec.pack.data)
}

// parseRecord decodes a payload. Its slices point into b.
func parseRecord(b []byte) (*record, error) {
	rec := &record{}
	if len(b) < 2 {
		return nil, errBadRecord
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if len(b) < n+2*hashLen+4 {
		return nil, errBadRecord
	}
	rec.name = plumbing.ReferenceName(b[:n])
	if err := checkRefName(rec.name); err != nil {
		return nil, err
	}
	b = b[n:]
	copy(rec.old[:], b)
	copy(rec.new[:], b[hashLen:])
	count := int(binary.BigEndian.Uint32(b[2*hashLen:]))
	b = b[2*hashLen+4:]
	if count > len(b)/idxEntryLen {
		return nil, errBadRecord
	}
	if count == 0 {
		if len(b) != 0 {
			return nil, errBadRecord
		}
		return rec, nil
	}
	rec.pack.entries = make([]idxEntry, count)
	for i := range rec.pack.entries {
		e := &rec.pack.entries[i]
		copy(e.hash[:], b)
		e.offset = int64(binary.BigEndian.Uint64(b[hashLen:]))
		e.crc = binary.BigEndian.Uint32(b[hashLen+8:])
		b = b[idxEntryLen:]
	}
	if len(b) < 12+hashLen || string(b[:8]) != "PACK\x00\x00\x00\x02" || int(binary.BigEndian.Uint32(b[8:])) != count {
		return nil, fmt.Errorf("%w: pack header", errBadRecord)
	}
	rec.pack.data = b
	copy(rec.pack.sum[:], b[len(b)-hashLen:])
	return rec, nil
}
