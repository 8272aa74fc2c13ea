// Package gitstore is an MVCC key-value store with etcd v3 semantics whose
// truth is a bare git repository: one branch per keyspace ("heaven"), one
// file per key, one commit per batch of writes, one revision per write.
//
// # Layout
//
// A key maps to a readable path (see KeyPath): "/registry/configmaps/default/web"
// becomes "registry/configmaps/default/web.json". JSON values are stored
// indented, one field per line, and compact back to exactly the written bytes;
// anything else is stored verbatim (".yaml" when it looks like YAML, ".raw"
// otherwise).
//
// # Revisions
//
// Revisions are per branch. Every commit the store makes carries its
// revisions in the message: one line per operation ("41 update <path>") and
// a "Heaven-Revision:" trailer. Commits made by others get the next revision
// when they are picked up. A branch that moves in a way that is not a
// first-parent fast-forward is answered with a merge commit whose first
// parent is the store's previous head and whose tree is the new head's, so
// the first-parent chain, and with it every revision, only grows. The same
// function assigns revisions when the store picks up a commit live and when
// it rebuilds its index from the branch, so revisions survive restarts.
//
// # Memory
//
// The index (keys, their revision history since the last compaction, and the
// current values) lives in memory and is rebuilt from the branch on open.
// Keys written with a lease are kept in memory only and never committed.
package gitstore
