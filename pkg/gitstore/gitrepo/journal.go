package gitrepo

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// The journal (heaven/journal; git ignores the directory) is what makes
// Commit durable with a single fdatasync: a record holding the ref move
// and the pack bytes is appended and synced, and only then are the pack,
// its index and the ref written, without fsync. Open replays the records
// of the current epoch; a checkpoint fsyncs what they describe and starts
// a new epoch, which turns them stale.
//
// The file is written with zeros before use (and when it grows), so an
// append overwrites allocated, initialized blocks and fdatasync has no
// metadata to commit (on this machine: 1.19 ms, against 1.6 ms for an
// append that extends a file and its fsync).
//
// Layout: a 4 KiB header page with two header slots, at 0 and 512,
// written alternately so that a torn header write leaves the other one;
// then records back to back from journalDataStart.
//
//	header slot: magic "HVNJ" | version u32 | generation u64 | epoch u64 | crc32c u32
//	record:      magic "HVNR" | epoch u64 | sequence u64 | length u32 | crc32c u32 | payload
//
// The slot with the higher generation holds the current epoch. Records of
// an epoch start at journalDataStart with sequence 0; replay stops at the
// first record whose magic, epoch, sequence, length or CRC (over the
// payload, then the 24 header bytes before it) is wrong: the end of the
// epoch, a torn write, or stale records of an older epoch. Epochs are
// random, not counted, so that no stale bytes (a pack stores incompressible
// data literally) can pass for a record of a later epoch. All integers are
// big-endian.

const (
	journalDirName   = "heaven"
	journalFileName  = "journal"
	journalDataStart = 4096
	journalSlotLen   = 512
	journalSlotSize  = 28
	recordHeaderLen  = 28
	journalMagic     = 0x48564e4a // "HVNJ"
	recordMagic      = 0x48564e52 // "HVNR"
	journalVersion   = 1

	// defaultJournalMax bounds the journal. It starts at
	// journalInitialSize and doubles when a record does not fit, so a
	// repository that commits little keeps a small one; once at its
	// maximum, a full journal forces a checkpoint.
	defaultJournalMax  = 64 << 20
	journalInitialSize = 1 << 20
)

var (
	// ErrCorruptJournal: neither header slot of the journal is valid, or
	// a record with a valid checksum does not parse.
	ErrCorruptJournal = errors.New("gitrepo: corrupt journal")

	errJournalFull = errors.New("gitrepo: journal full")
	castagnoli     = crc32.MakeTable(crc32.Castagnoli)
)

// journal is the open journal file. Records are appended under mu; their
// fdatasync is shared by all appends written before it (group commit).
type journal struct {
	f   *os.File
	max int64

	// inflight is held for reading by a Commit from its append until its
	// pack and ref are written, and for writing by a checkpoint: a new
	// epoch must never start while a record's files are unwritten.
	inflight sync.RWMutex

	mu     sync.Mutex // guards what follows; held while a record is written
	gen    uint64
	epoch  uint64
	seq    uint64
	size   int64 // bytes written with zeros or records: appends below it change no metadata
	off    int64 // end of the current epoch's records
	err    error // sticky: after a failed write or fdatasync, nothing after is known to be durable
	closed bool
	// Written since the last checkpoint, not fsynced: the checkpoint
	// syncs them. refs also tells CompareAndSwapRef which refs the
	// current epoch names.
	packs map[plumbing.Hash]struct{}
	refs  map[plumbing.ReferenceName]struct{}
	first time.Time // when the epoch's first record was appended

	syncMu sync.Mutex // one fdatasync at a time
	synced int64      // records before this offset are durable
}

func journalPath(repoDir string) string {
	return filepath.Join(repoDir, journalDirName, journalFileName)
}

// createJournal creates an empty journal of min(max, journalInitialSize)
// bytes, zero-filled and durable, atomically (a temporary file renamed).
func createJournal(repoDir string, max int64) (*journal, error) {
	path := journalPath(repoDir)
	if err := mkdirAllDurable(repoDir, filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"journal_")
	if err != nil {
		return nil, err
	}
	j := &journal{f: f, max: max, size: min(max, journalInitialSize), gen: 1, epoch: newEpoch(0)}
	j.reset()
	err = j.zeroFill(0, j.size)
	if err == nil {
		err = j.writeHeader(j.gen, j.epoch)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return j, nil
}

// openJournal opens the journal and reads the current epoch's records. It
// returns a nil journal when there is none.
func openJournal(repoDir string, max int64) (*journal, []*record, error) {
	f, err := os.OpenFile(journalPath(repoDir), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	j := &journal{f: f, max: max}
	j.reset()
	recs, err := j.load()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return j, recs, nil
}

// load reads the header and the records of its epoch.
func (j *journal) load() ([]*record, error) {
	fi, err := j.f.Stat()
	if err != nil {
		return nil, err
	}
	j.size = fi.Size()
	page := make([]byte, journalDataStart)
	if _, err := j.f.ReadAt(page, 0); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorruptJournal, err)
	}
	ok := false
	for slot := range 2 {
		if gen, epoch, valid := parseHeaderSlot(page[slot*journalSlotLen:]); valid && gen > j.gen {
			j.gen, j.epoch, ok = gen, epoch, true
		}
	}
	if !ok {
		return nil, fmt.Errorf("%w: no valid header", ErrCorruptJournal)
	}
	var recs []*record
	for {
		rec, next, err := j.readRecord(j.off)
		if err != nil || rec == nil {
			return recs, err
		}
		recs = append(recs, rec)
		j.off, j.synced = next, next
		j.seq++
	}
}

// readRecord returns the record of the current epoch and sequence at off,
// and where the next one starts; nil at the end of the epoch.
func (j *journal) readRecord(off int64) (*record, int64, error) {
	var hdr [recordHeaderLen]byte
	if off+recordHeaderLen > j.size {
		return nil, 0, nil
	}
	if _, err := j.f.ReadAt(hdr[:], off); err != nil {
		return nil, 0, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[20:]))
	if binary.BigEndian.Uint32(hdr[0:]) != recordMagic || binary.BigEndian.Uint64(hdr[4:]) != j.epoch ||
		binary.BigEndian.Uint64(hdr[12:]) != j.seq || n > j.size-off-recordHeaderLen {
		return nil, 0, nil
	}
	payload := make([]byte, n)
	if _, err := j.f.ReadAt(payload, off+recordHeaderLen); err != nil {
		return nil, 0, err
	}
	if crc32.Update(crc32.Checksum(payload, castagnoli), castagnoli, hdr[:24]) != binary.BigEndian.Uint32(hdr[24:]) {
		return nil, 0, nil // torn
	}
	rec, err := parseRecord(payload)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: record %d at %d: %v", ErrCorruptJournal, j.seq, off, err)
	}
	return rec, off + recordHeaderLen + n, nil
}

// reset starts the current epoch's records from scratch.
func (j *journal) reset() {
	j.seq, j.off, j.synced, j.first = 0, journalDataStart, journalDataStart, time.Time{}
	j.packs = map[plumbing.Hash]struct{}{}
	j.refs = map[plumbing.ReferenceName]struct{}{}
}

func (j *journal) writeHeader(gen, epoch uint64) error {
	var b [journalSlotSize]byte
	binary.BigEndian.PutUint32(b[0:], journalMagic)
	binary.BigEndian.PutUint32(b[4:], journalVersion)
	binary.BigEndian.PutUint64(b[8:], gen)
	binary.BigEndian.PutUint64(b[16:], epoch)
	binary.BigEndian.PutUint32(b[24:], crc32.Checksum(b[:24], castagnoli))
	_, err := j.f.WriteAt(b[:], int64(gen%2)*journalSlotLen)
	return err
}

func parseHeaderSlot(b []byte) (gen, epoch uint64, ok bool) {
	if binary.BigEndian.Uint32(b[0:]) != journalMagic || binary.BigEndian.Uint32(b[4:]) != journalVersion ||
		crc32.Checksum(b[:24], castagnoli) != binary.BigEndian.Uint32(b[24:]) {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(b[8:]), binary.BigEndian.Uint64(b[16:]), true
}

// newEpoch returns a random epoch other than prev and zero.
func newEpoch(prev uint64) uint64 {
	for {
		var b [8]byte
		rand.Read(b[:]) // never fails
		if e := binary.BigEndian.Uint64(b[:]); e != prev && e != 0 {
			return e
		}
	}
}

// close closes the file; appends fail with ErrClosed afterwards.
func (j *journal) close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	return j.f.Close()
}
