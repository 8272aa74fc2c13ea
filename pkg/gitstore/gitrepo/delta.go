package gitrepo

import "bytes"

// Deltas within a batch. The store rewrites one entry of a big directory
// per commit, so consecutive versions of a tree share everything but a few
// bytes in the middle. A git delta that copies the common prefix and
// suffix from the previous version and inserts the rest is found with two
// memory comparisons and is a few dozen bytes instead of the whole tree;
// without it a batch's pack is mostly near-identical trees (README.md).
// Git reads such deltas like its own (gitformat-pack(5), "Deltified
// representation").

const (
	// deltaMinSize: smaller objects are written whole; a delta would not
	// save enough to pay for reading through it.
	deltaMinSize = 1024
	// deltaWindow is how many earlier candidates (objects of at least
	// deltaMinSize, in batch order) each object is compared with.
	deltaWindow = 8
	// maxChain bounds delta chains, and with them the deltas a read applies.
	maxChain = 32
	// maxCopy is the largest copy one delta instruction expresses here
	// (git's decoder takes up to 0xffffff; 0x10000 has a special encoding
	// we avoid).
	maxCopy = 0xffff
)

// commonAffixes returns the lengths of the common prefix and, in what
// follows it, the common suffix of a and b. It compares in chunks with
// bytes.Equal (vectorized) and bytewise only inside the differing chunk.
func commonAffixes(a, b []byte) (prefix, suffix int) {
	const chunk = 256
	n := min(len(a), len(b))
	for prefix+chunk <= n && bytes.Equal(a[prefix:prefix+chunk], b[prefix:prefix+chunk]) {
		prefix += chunk
	}
	for prefix < n && a[prefix] == b[prefix] {
		prefix++
	}
	m := n - prefix
	for suffix+chunk <= m && bytes.Equal(a[len(a)-suffix-chunk:len(a)-suffix], b[len(b)-suffix-chunk:len(b)-suffix]) {
		suffix += chunk
	}
	for suffix < m && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	return prefix, suffix
}

// deltaSize estimates the delta from base to target with these affixes.
func deltaSize(target []byte, prefix, suffix int) int {
	mid := len(target) - prefix - suffix
	return 16 + mid + mid/127 + 8*(prefix/maxCopy+suffix/maxCopy+2)
}

// appendDelta appends the delta that rebuilds target from base by copying
// their common prefix and suffix and inserting the middle.
func appendDelta(dst, base, target []byte, prefix, suffix int) []byte {
	dst = appendDeltaSize(dst, len(base))
	dst = appendDeltaSize(dst, len(target))
	dst = appendCopy(dst, 0, prefix)
	for mid := target[prefix : len(target)-suffix]; len(mid) > 0; {
		n := min(len(mid), 127)
		dst = append(dst, byte(n))
		dst = append(dst, mid[:n]...)
		mid = mid[n:]
	}
	return appendCopy(dst, len(base)-suffix, suffix)
}

// appendDeltaSize appends a size of the delta header: little-endian
// base-128.
func appendDeltaSize(dst []byte, n int) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}

// appendCopy appends instructions copying base[off:off+n]: an opcode whose
// low bits say which offset (4) and size (2 used) bytes follow, zero bytes
// omitted.
func appendCopy(dst []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, maxCopy)
		op := len(dst)
		dst = append(dst, 0x80)
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				dst[op] |= 1 << i
				dst = append(dst, b)
			}
		}
		for i := range 2 {
			if b := byte(size >> (8 * i)); b != 0 {
				dst[op] |= 0x10 << i
				dst = append(dst, b)
			}
		}
		off += size
		n -= size
	}
	return dst
}

// deltaPlan says how to store an object: whole (base < 0), or as a delta
// against the object at index base of the same batch, written earlier.
type deltaPlan struct {
	base           int
	prefix, suffix int
}

// planDeltas picks a base for each object: of the last deltaWindow
// candidates, the one of its type giving the smallest delta, if that
// delta at most halves the object. The most recent candidate is usually
// the previous version, so a small enough delta ends the search.
func planDeltas(objs []batchObject) []deltaPlan {
	plan := make([]deltaPlan, len(objs))
	depth := make([]int, len(objs))
	var cands []int
	for i, o := range objs {
		plan[i].base = -1
		if len(o.data) < deltaMinSize {
			continue
		}
		best := len(o.data) / 2
		for k := len(cands) - 1; k >= max(0, len(cands)-deltaWindow) && best > len(o.data)/16; k-- {
			j := cands[k]
			if objs[j].t != o.t || depth[j] >= maxChain {
				continue
			}
			p, s := commonAffixes(objs[j].data, o.data)
			if d := deltaSize(o.data, p, s); d < best {
				best, plan[i] = d, deltaPlan{base: j, prefix: p, suffix: s}
			}
		}
		if plan[i].base >= 0 {
			depth[i] = depth[plan[i].base] + 1
		}
		cands = append(cands, i)
	}
	return plan
}
