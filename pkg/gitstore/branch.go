package gitstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// Branch is the keyspace of one git branch. All methods are safe for
// concurrent use.
//
// One goroutine, the writer (writer.go), owns every change: it evaluates
// transactions, commits them, and picks up commits made by others. Readers
// see the index at the committed revision, so a write is visible only once it
// is durable.
type Branch struct {
	name string
	ref  plumbing.ReferenceName
	repo *Repository // reads commits (with its caches)
	git  *gitrepo.Repo
	opts Options
	log  klog.Logger

	// mu guards the index and the revisions below. Lock order: Branch.mu
	// before leases.mu.
	mu        sync.RWMutex
	x         *index
	committed int64         // highest durable revision, what readers see
	changed   chan struct{} // closed (and replaced) when committed advances
	closedErr error         // set once the branch is closed

	// Writer-only state.
	latest int64                   // last revision handed out (≥ committed)
	head   plumbing.Hash           // the branch head the index reflects
	tree   plumbing.Hash           // head's tree
	mirror *treeMirror             // head's tree, patched per commit
	chain  map[plumbing.Hash]int64 // first-parent chain: commit → its last revision (written under mu)
	floor  int64                   // revisions up to here may have been handed out (branchstate.go)
	trees  treeCache               // trees of the last diffs (history.go)

	// problems are the head's files that are not served (problems.go);
	// written by the writer under mu.
	problems        problemSet
	problemsChanged bool // since the last notifyProblems (writer-only)
	pickup          pickupState

	headMu   sync.Mutex   // serialises recordHead
	note     *os.File     // the head file noteHead rewrites in place; under headMu
	recorded recordedHead // the head state last written (headstate.go)

	leases     *lessor
	reqs       chan *writeRequest
	kick       chan struct{} // the ref moved: ingest (see Repository.poll)
	lastBatch  int           // size of the previous group commit (writer-only)
	lastQueued int           // requests queued when it ended
	lastCost   time.Duration // how long it took
	stop       chan struct{}
	done       chan struct{}
}

func openBranch(ctx context.Context, repo *Repository, name string) (*Branch, error) {
	b := &Branch{
		name:     name,
		ref:      plumbing.NewBranchReferenceName(name),
		repo:     repo,
		git:      repo.git,
		opts:     repo.opts,
		log:      klog.FromContext(ctx).WithValues("branch", name),
		x:        newIndex(),
		changed:  make(chan struct{}),
		chain:    map[plumbing.Hash]int64{},
		problems: problemSet{},
		leases:   repo.leases,
		reqs:     make(chan *writeRequest, 1024),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	// An empty keyspace is at revision 1, as a new etcd is.
	b.committed, b.latest = 1, 1
	if err := b.rebuild(); err != nil {
		return nil, fmt.Errorf("branch %s: %w", name, err)
	}
	movedMeanwhile, err := b.rebuildFromRecordedHead()
	if err != nil {
		return nil, fmt.Errorf("branch %s: %w", name, err)
	}
	floor, err := b.readState(floorState)
	if err != nil {
		return nil, err
	}
	b.floor = floor
	start, err := b.reopenAt(floor)
	if err != nil {
		return nil, fmt.Errorf("branch %s: %w", name, err)
	}
	if start > b.latest {
		b.latest = start
		b.advance(start)
	}
	compacted, err := b.readState(compactState)
	if err != nil {
		return nil, err
	}
	if compacted > 0 && compacted <= b.committed {
		b.x.compactTo(compacted)
	}
	// Tell the caller what the rebuild found, problems or none.
	b.problemsChanged = true
	b.notifyProblems()
	go b.run()
	if movedMeanwhile {
		b.kick <- struct{}{} // merge the ref's commit at once
	}
	return b, nil
}

func (b *Branch) Name() string { return b.name }

// Revision is the current (durable) revision.
func (b *Branch) Revision() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.committed
}

// CompactRevision is the revision of the last compaction (0 if none).
func (b *Branch) CompactRevision() int64 {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.x.compact
}

// Head is the commit the branch's current revision reflects.
func (b *Branch) Head() plumbing.Hash {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.head
}

// Range reads keys at the current or an earlier revision: values come from
// memory, or from git blobs for history rebuilt at open. Returns
// ErrCompacted for revisions before the compaction point (as etcd does;
// RangeCompacted reads them from git) and ErrFutureRev for revisions not
// reached yet.
func (b *Branch) Range(ctx context.Context, r *RangeRequest) (*RangeResult, error) {
	if r.Key == "" {
		return nil, ErrEmptyKey
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closedErr != nil {
		return nil, b.closedErr
	}
	rev := b.committed
	if r.Revision > 0 {
		if r.Revision > b.committed {
			return nil, ErrFutureRev
		}
		if r.Revision < b.x.compact {
			return nil, ErrCompacted
		}
		rev = r.Revision
	}
	resp, err := rangeAt(b.x, r, rev, b.loadValue)
	if err != nil {
		return nil, err
	}
	resp.Revision = b.committed
	return resp, nil
}

// Txn evaluates compares and applies then or else. A txn that writes takes
// one revision and returns after it is durable; a read-only txn is answered
// at the committed revision without waiting for the writer.
func (b *Branch) Txn(ctx context.Context, t *Txn) (*TxnResult, error) {
	if readOnly(t) {
		return b.readTxn(t)
	}
	return b.submit(ctx, &writeRequest{txn: t})
}

func (b *Branch) readTxn(t *Txn) (*TxnResult, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closedErr != nil {
		return nil, b.closedErr
	}
	a := &txnApplier{x: b.x, base: b.committed, load: b.loadValue}
	resp, err := a.txn(t)
	if err != nil {
		return nil, err
	}
	resp.Revision = b.committed
	return resp, nil
}

func readOnly(t *Txn) bool {
	for _, ops := range [][]Op{t.Then, t.Else} {
		for _, op := range ops {
			switch {
			case op.Range != nil:
			case op.Txn != nil:
				if !readOnly(op.Txn) {
					return false
				}
			default:
				return false
			}
		}
	}
	return true
}

// Compact discards history before rev. ErrCompacted when the branch is
// already compacted at or after rev, ErrFutureRev when rev is not reached.
func (b *Branch) Compact(ctx context.Context, rev int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closedErr != nil {
		return b.closedErr
	}
	if rev <= b.x.compact {
		return ErrCompacted
	}
	if rev > b.committed {
		return ErrFutureRev
	}
	// Recorded first: a restart must not bring back what clients were
	// told is gone.
	if err := b.writeState(compactState, rev); err != nil {
		return err
	}
	b.x.compactTo(rev)
	b.log.V(2).Info("Compacted", "revision", rev)
	return nil
}

// loadValue returns a record's value, reading its blob from git when it is
// not in memory. Safe under b.mu (read or write).
func (b *Branch) loadValue(r *record) ([]byte, error) {
	if r.loaded || r.blob.IsZero() {
		return r.value, nil
	}
	return readValue(b.git, r.blob, r.ext)
}

// readValue reads a file the store wrote itself.
func readValue(git *gitrepo.Repo, blob plumbing.Hash, ext string) ([]byte, error) {
	content, err := readBlob(git, blob)
	if err != nil {
		return nil, err
	}
	return DecodeValue(content, ext)
}

func readBlob(git *gitrepo.Repo, blob plumbing.Hash) ([]byte, error) {
	bl, err := object.GetBlob(git.Storer(), blob)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", blob, err)
	}
	rd, err := bl.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// close stops the writer, then cancels watchers and fails readers.
func (b *Branch) close() {
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closedErr == nil {
		b.closedErr = ErrClosed
		close(b.changed) // wakes watchers, which see closedErr
	}
}

// Keys is how many keys the branch holds in memory: its objects, and the
// keys deleted since the last compaction (their history is kept until
// then).
func (b *Branch) Keys() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.x.keys.Len()
}
