package gitrepo

import (
	"bytes"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Write stores the batch's objects as one pack with its index, leaving out
// objects already in a pack (loose objects are not checked: a duplicate
// is harmless). When Write returns nil the objects are durable (pack,
// index and their names fsynced) and readable through Storer, so a ref
// may name them. An empty batch, or one whose objects are all stored,
// writes nothing.
func (r *Repo) Write(b *Batch) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	todo, err := r.unstored(b.objs, false)
	if err != nil || len(todo) == 0 {
		return err
	}
	return r.writePack(todo)
}

// unstored returns the objects no pack holds. Like git, it freshens
// (touches) the packs it relies on instead, so that git gc's grace period
// for unreachable objects counts from now: they are about to be
// referenced. That also checks the packs still exist: git gc may have
// removed one since the snapshot was taken. Held packs (held.go) count as
// stored only with withHeld: a Commit's pack is flushed with or after
// them, while Write's is on disk before them.
func (r *Repo) unstored(objs []batchObject, withHeld bool) ([]batchObject, error) {
	set := r.packs.Load()
	if set == nil {
		return nil, ErrClosed
	}
	var todo []batchObject
	stored := map[*pack][]batchObject{}
	for _, o := range objs {
		if p, _, ok := set.find(o.h); ok && (p.held == nil || withHeld) {
			if p.held == nil {
				stored[p] = append(stored[p], o)
			}
		} else {
			todo = append(todo, o)
		}
	}
	now := time.Now()
	for p, dup := range stored {
		if os.Chtimes(packPath(r.packDir, p.sum, ".pack"), now, now) != nil {
			todo = append(todo, dup...) // gone: write them again
		}
	}
	return todo, nil
}

// writePack writes objects as one durable pack and makes it visible.
func (r *Repo) writePack(todo []batchObject) error {
	p, err := r.storePack(encodePack(todo, &r.versions), true)
	if err != nil {
		return err
	}
	_, err = r.addPack(p)
	return err
}

// encodedPack is a whole pack in memory: what Write and Commit put in
// pack-<sum>.pack, and what Commit's journal records.
type encodedPack struct {
	data    []byte
	entries []idxEntry // in pack order
	sum     plumbing.Hash
}

// encodePack deltifies, compresses and lays out objects as a pack. With
// v, trees naming their previous version may be stored as deltas against
// bases of earlier batches, which the pack then holds too (versions.go).
func encodePack(todo []batchObject, v *versionBases) encodedPack {
	plan := planDeltas(todo)
	var bases, against []*fullObject
	var deltas [][]byte
	if v != nil {
		bases, against, deltas = planVersionDeltas(v, todo, plan)
	}
	entries := encodeEntries(todo, plan, deltas)
	if v != nil {
		rememberVersions(v, todo, plan, against, entries)
	}
	size := 12 + hashLen
	for _, b := range bases {
		size += 16 + len(b.z)
	}
	for _, e := range entries {
		size += 16 + len(e.z)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	pw, _ := startPack(buf, len(bases)+len(todo)) // writes to a bytes.Buffer do not fail
	baseAt := make(map[plumbing.Hash]int64, len(bases))
	for _, b := range bases {
		baseAt[b.h] = pw.off
		pw.add(b.h, appendEntryHeader(make([]byte, 0, 32), b.t, int64(len(b.data))), b.z)
	}
	offsets := make([]int64, len(todo))
	for i, e := range entries {
		offsets[i] = pw.off
		hdr := appendEntryHeader(make([]byte, 0, 32), e.t, e.size)
		switch {
		case against != nil && against[i] != nil:
			hdr = appendOfsDelta(hdr, pw.off-baseAt[against[i].h])
		case e.base >= 0:
			hdr = appendOfsDelta(hdr, offsets[i]-offsets[e.base])
		}
		pw.add(todo[i].h, hdr, e.z)
	}
	sum, _ := pw.end()
	return encodedPack{data: buf.Bytes(), entries: pw.entries, sum: sum}
}

// storePack writes ep under its final names, durably or not, and returns
// it opened, not yet visible to readers (addPack).
func (r *Repo) storePack(ep encodedPack, durable bool) (*pack, error) {
	t, err := r.stageEncoded(ep, durable)
	if err != nil {
		return nil, err
	}
	return t.place(durable)
}

// stageEncoded writes ep and its index to temporary files (stagePack).
func (r *Repo) stageEncoded(ep encodedPack, durable bool) (*packTemp, error) {
	f, err := os.CreateTemp(r.packDir, tmpPackPrefix)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(ep.data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return stagePack(r.packDir, f, ep.entries, ep.sum, int64(len(ep.data)), durable)
}

// deflate returns the zlib stream of an object's content (or a delta).
// Content shorter than storeBelow is stored, not compressed: for an object
// of a few hundred bytes (a Kubernetes object, a commit, a tree delta)
// compressing costs forty times what storing does (BenchmarkCompress: 7.8
// against 0.19 µs for a ConfigMap), mostly in building Huffman tables, and
// it is paid in the commit's path. Maintain's merges, off that path,
// compress them (recompress). README.md has the measurements.
func deflate(content []byte) []byte {
	if len(content) < storeBelow {
		return storingDeflater.appendDeflated(make([]byte, 0, 16+len(content)), content)
	}
	return deflater.appendDeflated(make([]byte, 0, 64+len(content)/2), content)
}

// storeBelow: content shorter than this is stored by deflate.
const storeBelow = 4 << 10

// packEntry is an object ready for the pack but for its header: what it
// stores (the object, or a delta against the entry at index base), and
// that content's size and zlib stream.
type packEntry struct {
	t    plumbing.ObjectType
	base int
	size int64
	z    []byte
}

// encodeEntries computes deltas and compresses on all CPUs: that is most
// of a batch's CPU time. Only the pack's checksum, over the entries in
// order, is serial.
func encodeEntries(objs []batchObject, plan []deltaPlan, deltas [][]byte) []packEntry {
	out := make([]packEntry, len(objs))
	encode := func(i int) {
		o, pl := &objs[i], plan[i]
		e := packEntry{t: o.t, base: pl.base}
		content := o.data
		switch {
		case deltas != nil && deltas[i] != nil:
			e.t, content = plumbing.OFSDeltaObject, deltas[i] // against a base ahead of objs
		case pl.base >= 0:
			e.t = plumbing.OFSDeltaObject
			content = appendDelta(nil, objs[pl.base].data, o.data, pl.prefix, pl.suffix)
		}
		e.size = int64(len(content))
		if pl.base < 0 && deltas == nil || pl.base < 0 && deltas[i] == nil {
			if o.z != nil {
				e.z = o.z
			}
		}
		if e.z == nil {
			e.z = deflate(content)
		}
		out[i] = e
	}
	// Little to compress (objects compressed ahead, deltas against earlier
	// versions): the goroutines would cost more than they save, mostly in
	// waiting to be scheduled on CPUs busy with the callers.
	work := 0
	for i, o := range objs {
		if plan[i].base >= 0 || deltas != nil && deltas[i] != nil || o.z == nil {
			work += len(o.data)
		}
	}
	if work < serialEncodeMax {
		for i := range objs {
			encode(i)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(objs); i = int(next.Add(1) - 1) {
				encode(i)
			}
		})
	}
	wg.Wait()
	return out
}

// serialEncodeMax: batches with less content to compress (deltas counted
// at their objects' size, an overestimate) are encoded by the caller's
// goroutine alone.
const serialEncodeMax = 64 << 10
