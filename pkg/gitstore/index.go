package gitstore

import (
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/google/btree"
)

// record is one version of a key: a put, or a tombstone (create == 0).
type record struct {
	mod     int64
	create  int64
	version int64
	lease   int64
	// value is the decoded value; nil with loaded == false means "read it
	// from blob" (history rebuilt from git is loaded lazily).
	value  []byte
	loaded bool
	blob   plumbing.Hash // zero for leased (ephemeral) keys and tombstones
	ext    string        // file extension in git; "" for ephemeral keys
	// outside: the file was committed by someone else and read with
	// Options.ReadFile; its value is always loaded.
	outside bool
}

func (r *record) tombstone() bool { return r.create == 0 }

// keyHistory is every version of one key since the last compaction,
// ascending by mod revision.
type keyHistory struct {
	key     string
	records []*record
}

func lessHistory(a, b *keyHistory) bool { return a.key < b.key }

// at returns the version of the key visible at rev, or nil.
func (h *keyHistory) at(rev int64) *record {
	i := sort.Search(len(h.records), func(i int) bool { return h.records[i].mod > rev })
	if i == 0 {
		return nil
	}
	if r := h.records[i-1]; !r.tombstone() {
		return r
	}
	return nil
}

func (h *keyHistory) latest() *record {
	if len(h.records) == 0 {
		return nil
	}
	return h.records[len(h.records)-1]
}

// change is one key changed at one revision.
type change struct {
	key  string
	rec  *record // the new version (a tombstone for deletes)
	prev *record // the version it replaced, nil if none
}

// revisionChanges are the changes of one revision, in the order applied.
type revisionChanges struct {
	rev     int64
	changes []change
}

// index is the in-memory MVCC view of a branch. It is not safe for
// concurrent use; Branch guards it.
type index struct {
	keys    *btree.BTreeG[*keyHistory]
	log     []revisionChanges // ascending by rev, entries ≥ compacted
	compact int64
}

func newIndex() *index {
	return &index{keys: btree.NewG(32, lessHistory)}
}

func (x *index) history(key string) *keyHistory {
	h, _ := x.keys.Get(&keyHistory{key: key})
	return h
}

// current returns the latest live version of key, or nil.
func (x *index) current(key string) *record {
	if h := x.history(key); h != nil {
		if r := h.latest(); r != nil && !r.tombstone() {
			return r
		}
	}
	return nil
}

// apply appends one revision's changes. Records must carry rev as mod.
func (x *index) apply(rev int64, changes []change) {
	for _, c := range changes {
		x.appendRecord(c.key, c.rec)
	}
	x.logRevision(rev, changes)
}

// appendRecord adds a key's newest version.
func (x *index) appendRecord(key string, rec *record) {
	h := x.history(key)
	if h == nil {
		h = &keyHistory{key: key}
		x.keys.ReplaceOrInsert(h)
	}
	h.records = append(h.records, rec)
}

// logRevision records a revision's changes, already appended per key, in
// the change log that watchers read.
func (x *index) logRevision(rev int64, changes []change) {
	x.log = append(x.log, revisionChanges{rev: rev, changes: changes})
}

// rollback removes everything applied after rev (writes that did not
// become durable).
func (x *index) rollback(rev int64) {
	i := sort.Search(len(x.log), func(i int) bool { return x.log[i].rev > rev })
	for _, rc := range x.log[i:] {
		for _, c := range rc.changes {
			h := x.history(c.key)
			if h == nil {
				continue
			}
			for len(h.records) > 0 && h.latest().mod > rev {
				h.records = h.records[:len(h.records)-1]
			}
			if len(h.records) == 0 {
				x.keys.Delete(h)
			}
		}
	}
	x.log = x.log[:i]
}

// ascend calls fn for every key history in [key, end); end "" means the
// single key, end "\x00" every key ≥ key.
func (x *index) ascend(key, end string, fn func(*keyHistory) bool) {
	switch end {
	case "":
		if h := x.history(key); h != nil {
			fn(h)
		}
	case "\x00":
		x.keys.AscendGreaterOrEqual(&keyHistory{key: key}, fn)
	default:
		x.keys.AscendRange(&keyHistory{key: key}, &keyHistory{key: end}, fn)
	}
}

// compactTo drops history older than rev: per key, the versions before rev
// except the one visible at rev (dropped too when it is a tombstone), and
// the change log before rev.
func (x *index) compactTo(rev int64) {
	var empty []*keyHistory
	x.keys.Ascend(func(h *keyHistory) bool {
		i := sort.Search(len(h.records), func(i int) bool { return h.records[i].mod > rev })
		// h.records[:i] are ≤ rev; keep the last of them unless it is a tombstone.
		keepFrom := i
		if i > 0 && !h.records[i-1].tombstone() {
			keepFrom = i - 1
		}
		if keepFrom > 0 {
			h.records = append([]*record(nil), h.records[keepFrom:]...)
		}
		if len(h.records) == 0 {
			empty = append(empty, h)
		}
		return true
	})
	for _, h := range empty {
		x.keys.Delete(h)
	}
	i := sort.Search(len(x.log), func(i int) bool { return x.log[i].rev >= rev })
	x.log = append([]revisionChanges(nil), x.log[i:]...)
	x.compact = rev
}

// changesFrom returns the log entries with rev ≥ from, at most max of them.
func (x *index) changesFrom(from int64, max int) []revisionChanges {
	i := sort.Search(len(x.log), func(i int) bool { return x.log[i].rev >= from })
	j := len(x.log)
	if j-i > max {
		j = i + max
	}
	return x.log[i:j]
}
