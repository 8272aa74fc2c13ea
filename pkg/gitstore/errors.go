package gitstore

import "errors"

// Errors returned by the store. The etcd facade maps each of them to the
// gRPC status etcd itself would answer with, in one table.
var (
	// ErrCompacted: the requested revision is older than the compaction point.
	ErrCompacted = errors.New("gitstore: required revision has been compacted")
	// ErrFutureRev: the requested revision is newer than the current one.
	ErrFutureRev = errors.New("gitstore: required revision is a future revision")
	// ErrEmptyKey: a request named no key.
	ErrEmptyKey = errors.New("gitstore: key is not provided")
	// ErrDuplicateKey: a transaction writes the same key twice.
	ErrDuplicateKey = errors.New("gitstore: duplicate key given in txn request")
	// ErrLeaseNotFound: a put names a lease that does not exist.
	ErrLeaseNotFound = errors.New("gitstore: requested lease not found")
	// ErrLeaseExists: a lease grant reuses an ID.
	ErrLeaseExists = errors.New("gitstore: lease already exists")
	// ErrClosed: the branch or repository was closed.
	ErrClosed = errors.New("gitstore: closed")
	// ErrInvalidBranch: the branch name is not a valid heaven name.
	ErrInvalidBranch = errors.New("gitstore: invalid branch name")
	// ErrValueProvided / ErrLeaseProvided: put with ignore_value / ignore_lease
	// and a value or lease at the same time.
	ErrValueProvided = errors.New("gitstore: value is provided")
	ErrLeaseProvided = errors.New("gitstore: lease is provided")
	// ErrKeyNotFound: put with ignore_value or ignore_lease on a missing key.
	ErrKeyNotFound = errors.New("gitstore: key not found")
	// ErrBusy: others kept moving the branch (or held its lock) through
	// every attempt of a write; nothing was written, a retry may succeed.
	ErrBusy = errors.New("gitstore: branch busy")
	// ErrRefConflict: the branch's ref cannot be created because another
	// ref is in its way (git keeps refs as files: a branch "a" and a
	// branch "a/b" exclude each other).
	ErrRefConflict = errors.New("gitstore: branch ref conflicts with another ref")
)
