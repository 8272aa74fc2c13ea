package gitrepo

import (
	"crypto/sha1"
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func testHash(i int) plumbing.Hash {
	return plumbing.Hash(sha1.Sum(fmt.Appendf(nil, "%d", i)))
}

func TestIndexRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		offsets []int64
	}{
		{"empty", nil},
		{"one", []int64{12}},
		{"many", []int64{12, 40, 100, 1000, 5000, 5001}},
		{"large offsets", []int64{12, 1<<31 - 1, 1 << 31, 1<<33 + 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var entries []idxEntry
			for i, off := range tc.offsets {
				entries = append(entries, idxEntry{hash: testHash(i), offset: off, crc: uint32(i * 31)})
			}
			packSum := testHash(-1)
			x, err := decodeIndex(encodeIndex(entries, packSum))
			require.NoError(t, err)
			require.Equal(t, len(tc.offsets), x.n)
			require.Equal(t, packSum, x.packChecksum())
			for i, off := range tc.offsets {
				pos := x.find(testHash(i))
				require.GreaterOrEqual(t, pos, 0)
				require.Equal(t, off, x.offset(pos))
				require.Equal(t, uint32(i*31), x.crc(pos))
				h, ok := x.hashAtOffset(off)
				require.True(t, ok)
				require.Equal(t, testHash(i), h)
				end := x.entryEnd(off, 1<<40)
				if i+1 < len(tc.offsets) {
					require.Equal(t, tc.offsets[i+1], end)
				} else {
					require.Equal(t, int64(1<<40-hashLen), end)
				}
			}
			require.Equal(t, -1, x.find(testHash(1000)))
			_, ok := x.hashAtOffset(13)
			require.False(t, ok)
		})
	}
}

func TestDecodeIndexRejectsDamage(t *testing.T) {
	good := encodeIndex([]idxEntry{{hash: testHash(1), offset: 12}, {hash: testHash(2), offset: 50}}, testHash(0))
	for name, mutate := range map[string]func([]byte) []byte{
		"truncated":     func(b []byte) []byte { return b[:len(b)-1] },
		"bad checksum":  func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"bad magic":     func(b []byte) []byte { b[0] = 0; return b },
		"only a header": func(b []byte) []byte { return b[:idxHeaderLen] },
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeIndex(mutate(append([]byte(nil), good...)))
			require.ErrorIs(t, err, errBadIndex)
		})
	}
}
