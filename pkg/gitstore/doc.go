// Package gitstore is an MVCC key-value store with etcd v3 semantics whose
// truth is a bare git repository: one branch per keyspace ("heaven"), one
// file per key, one commit per group of writes, one revision per write.
//
// # Layout
//
// A key maps to a readable path (KeyPath): "/registry/configmaps/default/web"
// is the file "registry/configmaps/default/web.json". JSON values are stored
// indented, one field per line, and compact back to exactly the written
// bytes; anything else is stored verbatim (".yaml" when it looks like YAML,
// ".raw" otherwise). See keypath.go.
//
// # Revisions
//
// Revisions are per branch. Every commit the store makes names its
// revisions in its message (commitmsg.go): one line per write and a
// "Heaven-Revision:" trailer. A commit made by someone else (git push) that
// extends the branch is one new revision when it is picked up. A branch moved
// any other way (a reset, a force-push) is answered with a merge commit whose
// first parent is the store's previous head and whose tree is the new head's,
// so the first-parent chain, and with it every revision, only grows. The same
// function (applyCommit) gives revisions when the store picks a commit up
// live and when it rebuilds its index from the branch, so revisions,
// create revisions and versions are the same after a restart. A commit
// that changes no value file takes no revision: a README pushed, or a merge
// that only joins histories (MergeRequest.Join, for a git remote that must
// find its head in ours).
//
// # Writes
//
// One writer goroutine per branch (writer.go) evaluates queued transactions
// in order against the latest state, builds one commit for the batch (more
// when a key repeats) and commits it through gitrepo.Repo.Commit, whose one
// fdatasync of a journal makes objects and ref durable together. The
// per-value work (indenting JSON, hashing and encoding the blob; gitrepo
// stores small objects uncompressed and compresses them when it merges
// packs) is done by the callers' goroutines before a request is queued, so
// the writer only assembles; each directory's tree names its previous
// version, so that gitrepo may store it as a delta. A group commit waits
// briefly (at most a commit and a half, 3 ms) for the writers the last one
// answered,
// so that clients writing in a loop share one commit instead of taking
// turns in two. Only then
// does the committed revision move: readers and watchers never see a write
// that could be lost. A ref that moved under us fails the commit before
// anything was acknowledged; the writer picks up the other commits and
// evaluates the batch again.
//
// # Merges
//
// Branch.Merge writes the result of a merge computed by the caller (the
// merge controller, from MergeBase, Snapshot and ChangedKeys) as one commit
// with two parents, the branch head and the merged commit, through the same
// writer as every other write: one revision for the whole merge, as for a
// transaction of several operations, and ordinary watch events. A merge
// computed against a head that has moved since is refused (ErrHeadMoved)
// before anything is written. Options.OnHead tells the caller whenever a
// branch head moves, by our commits or by commits picked up from outside.
//
// # Memory
//
// The index (index.go: keys, their versions since the last compaction, the
// change log that watchers read) lives in memory and is derived from the
// branch on open. Current values are held in memory; older values rebuilt
// from git are read from their blobs when asked for. Keys written with a
// lease are kept in memory only and never committed; their revisions are
// kept from being reused after a restart by a floor recorded beside the
// repository (branchstate.go), as is the compaction point.
package gitstore
