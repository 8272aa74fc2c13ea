package gitstore

// The store's API in its own terms. It has etcd's semantics (revisions,
// versions, compares, leases) so that an etcd v3 facade (package etcdv3,
// the only one that speaks etcd's protobuf types) and a Kubernetes storage
// client can both sit on it, but it carries no wire types: callers in the
// process never encode or decode a message.

// KeyValue is one version of a key.
type KeyValue struct {
	Key   string
	Value []byte // nil for keys-only reads
	// CreateRevision is the revision that created the key (as it lives
	// now), ModRevision the one that last wrote it; Version counts its
	// writes since it was created.
	CreateRevision, ModRevision, Version int64
	// Lease the key is attached to (0: none); leased keys live in memory
	// only.
	Lease int64
}

// RangeRequest selects keys: Key alone when End is empty, [Key, End)
// otherwise, every key ≥ Key when End is "\x00".
type RangeRequest struct {
	Key, End string
	// Revision to read at; 0 reads the current one.
	Revision int64
	// Limit bounds the keys returned (0: no limit); Count still counts
	// every key selected.
	Limit               int64
	KeysOnly, CountOnly bool
	// SortBy and Descending order the keys (default: by key, ascending).
	SortBy     SortTarget
	Descending bool
	// Keys whose revisions are outside these bounds are skipped (0: no
	// bound).
	MinModRevision, MaxModRevision, MinCreateRevision, MaxCreateRevision int64
}

// SortTarget is what RangeRequest.SortBy sorts by.
type SortTarget int

const (
	SortByKey SortTarget = iota
	SortByVersion
	SortByCreateRevision
	SortByModRevision
	SortByValue
)

// RangeResult is what a range read found.
type RangeResult struct {
	KVs []KeyValue
	// Count is how many keys the request selected, More whether KVs holds
	// fewer of them.
	Count int64
	More  bool
	// Revision is the branch's current revision.
	Revision int64
}

// Txn is a transaction: if every compare in If holds, the Then ops run,
// else the Else ops, at one revision when they write.
type Txn struct {
	If         []Compare
	Then, Else []Op
	// Author is who asked for the transaction (a Kubernetes user name): the
	// author of the git commit holding its writes; the store's own name when
	// empty. Writes of different authors never share a commit.
	Author string
}

// Compare tests the keys of Key (and End, as in RangeRequest): every one
// that exists must satisfy it; a compare of an absent key sees zeros (and
// a Value compare of one fails).
type Compare struct {
	Key, End string
	Target   CompareTarget
	Result   CompareResult
	// Number is compared with versions, revisions and leases; Value with
	// values.
	Number int64
	Value  []byte
}

// CompareTarget is the field a Compare tests.
type CompareTarget int

const (
	CompareVersion CompareTarget = iota
	CompareCreateRevision
	CompareModRevision
	CompareValue
	CompareLease
)

// CompareResult is how a Compare tests it.
type CompareResult int

const (
	Equal CompareResult = iota
	NotEqual
	Greater
	Less
)

// Op is one operation of a transaction: exactly one of its fields is set.
type Op struct {
	Range  *RangeRequest
	Put    *PutOp
	Delete *DeleteOp
	Txn    *Txn
}

// PutOp writes a key.
type PutOp struct {
	Key   string
	Value []byte
	// Lease attaches the key to a lease (it then lives in memory only).
	Lease int64
	// PrevKV returns the version it replaced.
	PrevKV bool
	// IgnoreValue and IgnoreLease keep the key's current value or lease
	// (the key must exist).
	IgnoreValue, IgnoreLease bool
}

// DeleteOp deletes Key, or the keys of [Key, End) as in RangeRequest.
type DeleteOp struct {
	Key, End string
	PrevKV   bool
}

// TxnResult says which branch of a transaction ran and what each op did.
type TxnResult struct {
	Succeeded bool
	// Revision is the branch's revision after the transaction.
	Revision int64
	Results  []OpResult
}

// OpResult is the result of one Op: the field matching the op is set.
type OpResult struct {
	Range  *RangeResult
	Put    *PutResult
	Delete *DeleteResult
	Txn    *TxnResult
}

// PutResult is what a PutOp did.
type PutResult struct {
	PrevKV *KeyValue // with PutOp.PrevKV, the version replaced
}

// DeleteResult is what a DeleteOp did.
type DeleteResult struct {
	Deleted int64
	PrevKVs []KeyValue // with DeleteOp.PrevKV
}

// EventType says whether an event wrote or deleted its key.
type EventType int

const (
	EventPut EventType = iota
	EventDelete
)

// Event is one change a watcher sees.
type Event struct {
	Type EventType
	// KV is the key's new version; for a delete, only Key and
	// ModRevision (the delete's revision) are set.
	KV KeyValue
	// PrevKV is the version the change replaced, when the watch asked
	// for it and it is not compacted.
	PrevKV *KeyValue
}
