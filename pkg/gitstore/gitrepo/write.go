package gitrepo

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// Write stores the batch's objects as one pack with its index, leaving out
// objects already in a pack (loose objects are not checked: a duplicate
// is harmless). When Write returns nil the objects are durable (pack,
// index and their names fsynced) and readable through Storer, so a ref
// may name them. An empty batch, or one whose objects are all stored,
// writes nothing. The batch may be reused or dropped afterwards.
func (r *Repo) Write(b *Batch) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	set := r.packs.Load()
	if set == nil {
		return ErrClosed
	}
	var todo []batchObject
	for _, o := range b.objs {
		if _, _, ok := set.find(o.h); !ok {
			todo = append(todo, o)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	entries := encodeEntries(todo)
	pw, err := newPackWriter(r.packDir, len(todo))
	if err != nil {
		return err
	}
	for i, o := range todo {
		if err := pw.add(o.h, entries[i]); err != nil {
			pw.abort()
			return err
		}
	}
	p, err := pw.finish()
	if err != nil {
		return err
	}
	return r.addPack(p)
}

// encodeEntries turns objects into pack entries (header and zlib stream)
// on all CPUs: compression is most of a batch's CPU time. Only the pack's
// checksum, over the entries in order, is serial.
func encodeEntries(objs []batchObject) [][]byte {
	out := make([][]byte, len(objs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(objs); i = int(next.Add(1) - 1) {
				o := &objs[i]
				buf := make([]byte, 0, 16+len(o.data)/2)
				buf = appendEntryHeader(buf, o.t, int64(len(o.data)))
				out[i] = compressLevel(o.t).appendDeflated(buf, o.data)
			}
		})
	}
	wg.Wait()
	return out
}
