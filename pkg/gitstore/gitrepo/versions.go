package gitrepo

import (
	"bytes"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Deltas against versions written by earlier batches.
//
// Deltas within a batch (delta.go) leave the first version of every big
// directory in a batch whole, and zlib-compressing it (a 1,000-entry tree
// is 48 KB) was most of a batch's encoding time in the store benchmark,
// where a batch is one commit changing a dozen entries of one directory.
// The store names each tree's previous version (Batch.AddTreeVersion), so
// such a tree is stored as a delta against the last version of its
// directory that was stored whole (its base), whose content and zlib
// stream are kept in memory: the base's stream is copied, not compressed
// again, into the pack ahead of the delta, because a pack on disk must hold
// its deltas' bases (git reads no thin packs from disk). The pack is then
// about as large as with the tree whole (the base's stream, plus a delta
// that grows as the directory drifts from its base), the compression is of
// the delta alone, and the base is an object stored twice (git and
// Maintain's merges keep one copy of duplicates). Once the delta would
// exceed a quarter of the tree, the tree is stored whole and becomes its
// directory's next base.
//
// The delta copies the runs of entries the two trees share and inserts
// the others; trees are sorted, so one merge pass finds them.

// versionBases remembers, for trees written recently, the base they were
// stored against (or stored whole as): what the next version may use.
type versionBases struct {
	mu   sync.Mutex
	full map[plumbing.Hash]*fullObject // bases by name
	of   map[plumbing.Hash]*fullObject // a version → its base
}

// fullObject is an object stored whole: its content and zlib stream.
type fullObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
	z    []byte
}

const (
	// maxBases bounds the bases held (each its content and stream, ~75 KB
	// for a 1,000-entry tree); maxVersions the versions mapped to them.
	// Beyond, all are forgotten: the next version of each directory is
	// stored whole again.
	maxBases    = 64
	maxVersions = 1 << 14
	// xdeltaMaxRatio: a delta larger than 1/xdeltaMaxRatio of the tree is
	// not used; the tree is stored whole and becomes a base.
	xdeltaMaxRatio = 4
)

// baseOf returns the base of version prev, if known.
func (v *versionBases) baseOf(prev plumbing.Hash) *fullObject {
	if prev.IsZero() {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.of[prev]
}

// add records that version h was stored against base (or is base).
func (v *versionBases) add(h plumbing.Hash, base *fullObject) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.full[base.h]; !ok && len(v.full) >= maxBases || len(v.of) >= maxVersions {
		v.full, v.of = nil, nil
	}
	if v.full == nil {
		v.full, v.of = map[plumbing.Hash]*fullObject{}, map[plumbing.Hash]*fullObject{}
	}
	if b, ok := v.full[base.h]; ok {
		base = b
	} else {
		v.full[base.h] = base
	}
	v.of[h] = base
}

// planVersionDeltas extends plan (planDeltas' for objs) with deltas against
// earlier versions: for each tree stored whole with a known base, the
// delta if it is small enough. It returns the bases to put in the pack
// ahead of objs, and the deltas (by index in objs; nil: none).
func planVersionDeltas(v *versionBases, objs []batchObject, plan []deltaPlan) ([]*fullObject, []*fullObject, [][]byte) {
	var bases []*fullObject
	var against []*fullObject
	var deltas [][]byte
	in := map[plumbing.Hash]bool{}
	var inBatch map[plumbing.Hash]bool
	for i, o := range objs {
		if plan[i].base >= 0 || o.t != plumbing.TreeObject || len(o.data) < deltaMinSize {
			continue
		}
		b := v.baseOf(o.prev)
		if b == nil || b.t != o.t {
			continue
		}
		if inBatch == nil {
			inBatch = make(map[plumbing.Hash]bool, len(objs))
			for _, o := range objs {
				inBatch[o.h] = true
			}
		}
		if inBatch[b.h] {
			continue // a pack holds an object once
		}
		d := appendTreeDelta(nil, b.data, o.data, len(o.data)/xdeltaMaxRatio)
		if d == nil {
			continue
		}
		if deltas == nil {
			against, deltas = make([]*fullObject, len(objs)), make([][]byte, len(objs))
		}
		against[i], deltas[i] = b, d
		if !in[b.h] {
			in[b.h] = true
			bases = append(bases, b)
		}
	}
	return bases, against, deltas
}

// rememberVersions records, after a pack is encoded, the base of every
// tree written with its previous version named: the base its delta chain
// starts from (one of bases, or a tree of objs stored whole).
func rememberVersions(v *versionBases, objs []batchObject, plan []deltaPlan, against []*fullObject, entries []packEntry) {
	root := make([]*fullObject, len(objs))
	for i, o := range objs {
		switch {
		case against != nil && against[i] != nil:
			root[i] = against[i]
		case plan[i].base >= 0:
			root[i] = root[plan[i].base]
		case o.own && o.t == plumbing.TreeObject && len(o.data) >= deltaMinSize:
			root[i] = &fullObject{h: o.h, t: o.t, data: o.data, z: entries[i].z}
		}
		if root[i] != nil && o.t == plumbing.TreeObject && !o.prev.IsZero() {
			v.add(o.h, root[i])
		}
	}
}

// appendTreeDelta appends a git delta rebuilding the tree target from
// the tree base: runs of entries found unchanged in base are copied, the
// rest inserted. It returns nil if the delta would exceed limit bytes or
// either tree is malformed.
func appendTreeDelta(dst, base, target []byte, limit int) []byte {
	start := len(dst)
	dst = appendDeltaSize(dst, len(base))
	dst = appendDeltaSize(dst, len(target))
	copyOff, copyLen := 0, 0 // pending copy from base
	insFrom, insTo := 0, 0   // pending insert from target
	flushCopy := func() {
		dst = appendCopy(dst, copyOff, copyLen)
		copyLen = 0
	}
	flushInsert := func() {
		for mid := target[insFrom:insTo]; len(mid) > 0; {
			n := min(len(mid), 127)
			dst = append(dst, byte(n))
			dst = append(dst, mid[:n]...)
			mid = mid[n:]
		}
		insFrom = insTo
	}
	bo := 0
	for to := 0; to < len(target); {
		tEnd, tName, ok := treeRecord(target, to)
		if !ok {
			return nil
		}
		// Skip base entries sorting before this one.
		bEnd := bo
		for bo < len(base) {
			var bName []byte
			if bEnd, bName, ok = treeRecord(base, bo); !ok {
				return nil
			}
			if compareTreeNames(bName, base[bo], tName, target[to]) >= 0 {
				break
			}
			bo = bEnd
		}
		if bo < len(base) && bytes.Equal(base[bo:bEnd], target[to:tEnd]) {
			if insTo > insFrom {
				flushInsert()
			}
			if copyLen > 0 && copyOff+copyLen != bo {
				flushCopy()
			}
			if copyLen == 0 {
				copyOff = bo
			}
			copyLen += bEnd - bo
			bo = bEnd
		} else {
			if copyLen > 0 {
				flushCopy()
			}
			if insTo == insFrom {
				insFrom = to
			}
			insTo = tEnd
		}
		to = tEnd
		if len(dst)-start+(insTo-insFrom) > limit {
			return nil
		}
	}
	if copyLen > 0 {
		flushCopy()
	}
	flushInsert()
	if len(dst)-start > limit {
		return nil
	}
	return dst
}

// treeRecord parses the entry of tree data at off ("<mode> <name>\0<20
// bytes>"): where it ends and its name.
func treeRecord(data []byte, off int) (end int, name []byte, ok bool) {
	sp := bytes.IndexByte(data[off:], ' ')
	if sp < 0 {
		return 0, nil, false
	}
	nul := bytes.IndexByte(data[off+sp+1:], 0)
	if nul < 0 {
		return 0, nil, false
	}
	end = off + sp + 1 + nul + 1 + hashLen
	if end > len(data) {
		return 0, nil, false
	}
	return end, data[off+sp+1 : off+sp+1+nul], true
}

// compareTreeNames orders entries as git sorts them: a directory (mode
// "40000", whose record starts with '4') as if its name ended in '/'.
func compareTreeNames(a []byte, aMode0 byte, b []byte, bMode0 byte) int {
	n := min(len(a), len(b))
	if c := bytes.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	ca, cb := nameEnd(a, n, aMode0), nameEnd(b, n, bMode0)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

// nameEnd is the byte after the common length n of a name: its next
// byte, a '/' for a directory's end, or none (-1).
func nameEnd(name []byte, n int, mode0 byte) int {
	if len(name) > n {
		return int(name[n])
	}
	if mode0 == '4' {
		return '/'
	}
	return -1
}
