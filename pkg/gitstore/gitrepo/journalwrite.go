package gitrepo

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Appending to the journal, and what the current epoch's records describe.

// fits reports whether a record with this payload can ever be appended:
// whether it fits in the journal at its largest.
func (j *journal) fits(payloadLen int) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return int64(recordHeaderLen+payloadLen) <= max(j.max, j.size)-journalDataStart
}

// append writes a record with payload (whose CRC-32C is payloadCRC) at the
// end of the epoch, tracks the files it describes, and returns where it
// ends: sync(end) makes it durable. It returns errJournalFull when the
// record does not fit before the end: checkpoint, then retry.
func (j *journal) append(rec []byte, payloadCRC uint32, name plumbing.ReferenceName, pack plumbing.Hash) (int64, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch {
	case j.closed:
		return 0, ErrClosed
	case j.err != nil:
		return 0, j.err
	}
	end := j.off + int64(len(rec))
	if end > j.size && j.size < j.max {
		if err := j.grow(end); err != nil {
			return 0, err
		}
	}
	if end > j.size {
		return 0, errJournalFull
	}
	binary.BigEndian.PutUint32(rec[0:], recordMagic)
	binary.BigEndian.PutUint64(rec[4:], j.epoch)
	binary.BigEndian.PutUint64(rec[12:], j.seq)
	binary.BigEndian.PutUint32(rec[20:], uint32(len(rec)-recordHeaderLen))
	binary.BigEndian.PutUint32(rec[24:], crc32.Update(payloadCRC, castagnoli, rec[:24]))
	if _, err := j.f.WriteAt(rec, j.off); err != nil {
		// Nothing after this point may be trusted: a partial record
		// would end every later replay early.
		j.err = fmt.Errorf("gitrepo: journal write: %w", err)
		return 0, j.err
	}
	if j.seq == 0 {
		j.first = time.Now()
	}
	j.off, j.seq = end, j.seq+1
	j.refs[name] = struct{}{}
	if !pack.IsZero() {
		j.packs[pack] = struct{}{}
	}
	return end, nil
}

// sync returns once the journal is durable up to end. A caller finding an
// fdatasync in progress waits for it, then issues one covering every
// record written meanwhile, so concurrent Commits share their syncs.
func (j *journal) sync(end int64) error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	if j.synced >= end {
		return nil
	}
	j.mu.Lock()
	target, err := j.off, j.err
	j.mu.Unlock()
	if err != nil {
		return err
	}
	if err := datasync(j.f); err != nil {
		// The kernel may have dropped the failed pages and report the
		// next fdatasync as a success (fsyncgate): stop for good.
		j.mu.Lock()
		j.err = fmt.Errorf("gitrepo: journal fdatasync: %w", err)
		j.mu.Unlock()
		return err
	}
	j.synced = target
	return nil
}

// fail stops the journal: every later append fails with err.
func (j *journal) fail(err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err == nil {
		j.err = err
	}
}

// grow zero-fills the journal to at least end: double, up to max. The
// size changes, so this costs a full fsync, once per doubling.
func (j *journal) grow(end int64) error {
	size := min(j.max, max(2*j.size, end))
	if err := j.zeroFill(j.size, size); err != nil {
		return err
	}
	if err := j.f.Sync(); err != nil {
		j.err = fmt.Errorf("gitrepo: journal fsync: %w", err)
		return j.err
	}
	j.size = size
	return nil
}

func (j *journal) zeroFill(from, to int64) error {
	zeros := make([]byte, min(to-from, 1<<20))
	for off := from; off < to; off += int64(len(zeros)) {
		if _, err := j.f.WriteAt(zeros[:min(int64(len(zeros)), to-off)], off); err != nil {
			return err
		}
	}
	return nil
}

// pending returns what the current epoch's records describe.
func (j *journal) pending() ([]plumbing.Hash, []plumbing.ReferenceName, uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	packs := make([]plumbing.Hash, 0, len(j.packs))
	for p := range j.packs {
		packs = append(packs, p)
	}
	refs := make([]plumbing.ReferenceName, 0, len(j.refs))
	for r := range j.refs {
		refs = append(refs, r)
	}
	return packs, refs, j.seq
}

// oldest returns when the epoch's first record was appended, if any was
// (replayed records count from Open).
func (j *journal) oldest() (time.Time, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.first, j.seq > 0
}

// names reports whether a record of the current epoch moves ref name.
func (j *journal) names(name plumbing.ReferenceName) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	_, ok := j.refs[name]
	return ok
}

// track adds files to sync at the next checkpoint (recovery).
func (j *journal) track(name plumbing.ReferenceName, pack plumbing.Hash) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.refs[name] = struct{}{}
	if !pack.IsZero() {
		j.packs[pack] = struct{}{}
	}
}

// trackPack adds a pack a flush wrote to those to sync at the next
// checkpoint.
func (j *journal) trackPack(pack plumbing.Hash) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.packs[pack] = struct{}{}
}

// startEpoch makes every record stale: a new epoch in the other header
// slot, synced. The caller holds inflight for writing and has made what
// the records describe durable.
func (j *journal) startEpoch() error {
	j.syncMu.Lock()
	defer j.syncMu.Unlock()
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.err != nil {
		return j.err
	}
	gen, epoch := j.gen+1, newEpoch(j.epoch)
	if err := j.writeHeader(gen, epoch); err != nil {
		return err
	}
	if err := datasync(j.f); err != nil {
		j.err = fmt.Errorf("gitrepo: journal fdatasync: %w", err)
		return j.err
	}
	j.gen, j.epoch = gen, epoch
	j.reset()
	return nil
}
