package gitstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// writeRequest is one transaction (or lease revocation) waiting for the
// writer.
type writeRequest struct {
	txn         *Txn
	revokeLease int64        // instead of txn: delete every key attached to this lease
	merge       *mergeIntent // the txn is a merge: its own commit, two parents (merge.go)

	encoded []encodedValue // its puts' values encoded by the caller (encodeValues)

	resp    *TxnResult
	changes []change // what the request changed, at rev
	rev     int64
	err     error
	done    chan struct{}
}

// maxBatch bounds how many requests one group commit takes.
const maxBatch = 512

// maxCASRetries bounds how often a batch is re-evaluated because someone
// else moved the branch between our evaluation and our ref update.
const maxCASRetries = 5

func (b *Branch) submit(ctx context.Context, r *writeRequest) (*TxnResult, error) {
	r.done = make(chan struct{})
	if r.txn != nil {
		r.encoded = encodeValues(r.txn, r.encoded)
	}
	select {
	case b.reqs <- r:
	case <-b.stop:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-r.done:
		return r.resp, r.err
	case <-ctx.Done():
		// The write may still land, as with etcd.
		return nil, ctx.Err()
	}
}

// encodedValue is a put's value as its blob, encoded (EncodeValue), named
// and compressed in the caller's goroutine: the one writer of a branch
// then only assembles what many callers prepared.
type encodedValue struct {
	value []byte // the request's value, matched by identity
	ext   string
	blob  *gitrepo.Encoded
}

// encodeValues appends the encoded values of the puts txn may do (either
// branch, nested transactions too) that git would store: not leased and
// carrying a value.
func encodeValues(txn *Txn, out []encodedValue) []encodedValue {
	for _, ops := range [][]Op{txn.Then, txn.Else} {
		for _, op := range ops {
			switch {
			case op.Put != nil:
				p := op.Put
				if p.Lease != 0 || p.IgnoreValue || len(p.Value) == 0 {
					continue
				}
				content, ext := EncodeValue(p.Value)
				out = append(out, encodedValue{value: p.Value, ext: ext, blob: gitrepo.EncodeBlob(content)})
			case op.Txn != nil:
				out = encodeValues(op.Txn, out)
			}
		}
	}
	return out
}

// encodedFor returns the value encoded ahead for this very slice, if any.
func (r *writeRequest) encodedFor(value []byte) *encodedValue {
	if len(value) == 0 {
		return nil
	}
	for i := range r.encoded {
		if e := &r.encoded[i]; len(e.value) == len(value) && &e.value[0] == &value[0] {
			return e
		}
	}
	return nil
}

// run is the writer goroutine: group commit of queued requests, and picking
// up commits made by others when the repository's poller saw the ref move.
func (b *Branch) run() {
	defer close(b.done)
	for {
		select {
		case <-b.stop:
			b.drain(ErrClosed)
			return
		case r := <-b.reqs:
			batch := b.collect(r)
			start := time.Now()
			b.commitBatch(batch)
			b.lastBatch, b.lastCost, b.lastQueued = len(batch), time.Since(start), len(b.reqs)
		case <-b.kick:
			b.pickUp()
		}
	}
}

// collect forms a group commit starting with r: every queued request,
// then, when the writers the last batch answered have not come back yet,
// a short wait for them. Clients that write in a loop (a kube-apiserver
// under load) come back one round trip after their answer; starting the
// next commit without them splits them into two groups that take turns,
// each commit carrying half of them. The wait is bounded by the last
// commit's cost and a half, so a client that does not come back costs at
// most that in latency. (Clients on loopback gRPC come back 1.5–2 ms after
// their answer on a busy 2-CPU machine, longer than a commit now takes:
// waiting for half a commit's cost left batches at 9 of 16 writers; a
// commit and a half made the store benchmark's write_ratio 0.71 against
// 0.66, medians of 7 runs in alternation.)
func (b *Branch) collect(r *writeRequest) []*writeRequest {
	batch := []*writeRequest{r}
	target := min(maxBatch, b.lastBatch+b.lastQueued)
	for len(batch) < maxBatch {
		select {
		case r := <-b.reqs:
			batch = append(batch, r)
			continue
		default:
		}
		break
	}
	if len(batch) >= target || b.lastBatch <= 1 {
		return batch
	}
	timer := time.NewTimer(min(b.lastCost*3/2, maxGroupWait))
	defer timer.Stop()
	for len(batch) < target {
		select {
		case r := <-b.reqs:
			batch = append(batch, r)
		case <-timer.C:
			return batch
		}
	}
	return batch
}

// maxGroupWait bounds how long collect waits for writers to come back.
const maxGroupWait = 3 * time.Millisecond

func (b *Branch) drain(err error) {
	for {
		select {
		case r := <-b.reqs:
			r.err = err
			close(r.done)
		default:
			return
		}
	}
}

// commitBatch evaluates the batch in order, commits its git-backed changes
// durably, then makes them visible and answers every request. A commit
// that loses the ref to someone else (a push) picks their commits up and
// tries again, a bounded number of times with backoff; every failure that
// remains is answered with an error that says what to do.
func (b *Branch) commitBatch(batch []*writeRequest) {
	defer b.notifyProblems()
	defer b.notifyHead(b.head)
	for attempt := 0; ; attempt++ {
		b.evaluate(batch)
		err := b.persist(batch)
		if err == nil {
			// The ref was where we expected: whatever failed to be picked
			// up is gone.
			b.pickup.record(b.log, nil, time.Now())
			b.publish(batch)
			return
		}
		b.mu.Lock()
		b.x.rollback(b.committed)
		b.latest = b.committed
		b.mu.Unlock()
		if rerr := b.resetMirror(); rerr != nil {
			err = errors.Join(err, rerr)
		} else if b.retryCommit(err, attempt) {
			continue
		}
		err = b.commitError(err)
		b.log.Error(err, "Commit failed", "requests", len(batch), "attempts", attempt+1)
		for _, r := range batch {
			if r.err == nil {
				r.err = err
			}
			close(r.done)
		}
		return
	}
}

// retryCommit says whether a failed commit is worth another attempt, and
// gets ready for it: none of the batch was acknowledged yet.
func (b *Branch) retryCommit(err error, attempt int) bool {
	if attempt >= maxCASRetries {
		return false
	}
	switch {
	case errors.Is(err, gitrepo.ErrRefChanged):
		// Someone else committed: take their commits first, then
		// evaluate ours again on top.
		now := time.Now()
		if b.pickup.waiting(now) {
			return false
		}
		b.pickup.record(b.log, b.ingest(), now)
		if b.pickup.err != nil {
			return false
		}
		if attempt > 0 {
			time.Sleep(casBackoff << attempt) // pushed to in a loop: let it pass
		}
		return true
	case errors.Is(err, gitrepo.ErrRefLocked):
		time.Sleep(casBackoff << (attempt + 1)) // git holds the ref right now
		return true
	}
	return false
}

// casBackoff is the first wait between attempts at a contended ref; it
// doubles per attempt (at most about 0.3 s in all).
const casBackoff = 5 * time.Millisecond

// commitError turns the last error of a failed commit into one a client
// can act on.
func (b *Branch) commitError(err error) error {
	switch {
	case errors.Is(err, gitrepo.ErrRefChanged) && b.pickup.err != nil:
		return fmt.Errorf("%w: branch %s moved to commits that cannot be read (%v); writes resume once they can be", ErrUnavailable, b.name, b.pickup.err)
	case errors.Is(err, gitrepo.ErrRefChanged), errors.Is(err, gitrepo.ErrRefLocked):
		return fmt.Errorf("%w: branch %s is being moved by others (git pushes) faster than the store can catch up: %v", ErrBusy, b.name, err)
	case errors.Is(err, gitrepo.ErrRefConflict):
		return fmt.Errorf("%w: branch %s cannot be written: %v", ErrRefConflict, b.name, err)
	}
	return err
}

// evaluate applies each request to the index at the next revision (not yet
// visible to readers).
func (b *Branch) evaluate(batch []*writeRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	changed := false
	for _, r := range batch {
		r.resp, r.err, r.changes, r.rev = nil, nil, nil, 0
		if r.merge != nil {
			if r.err = r.merge.begin(b.head, changed); r.err != nil {
				continue
			}
		}
		a := &txnApplier{x: b.x, base: b.latest, load: b.loadValue, lessor: b.leases.exists}
		if r.revokeLease != 0 {
			a.revoke(r.revokeLease)
			r.resp = &TxnResult{Succeeded: true}
		} else {
			r.resp, r.err = a.txn(r.txn)
		}
		if r.err != nil {
			// validate() runs before any write, so nothing was applied.
			continue
		}
		if len(a.changes) > 0 {
			changed = true
			b.latest = a.rev()
			r.rev, r.changes = b.latest, a.changes
			b.x.logRevision(r.rev, a.changes)
		}
		r.resp.Revision = b.latest
	}
}

// revoke deletes every key attached to lease id, at one revision.
func (a *txnApplier) revoke(id int64) {
	var victims []change
	a.x.keys.Ascend(func(h *keyHistory) bool {
		if prev := h.latest(); prev != nil && !prev.tombstone() && prev.lease == id {
			victims = append(victims, change{key: h.key, rec: &record{mod: a.rev()}, prev: prev})
		}
		return true
	})
	for _, c := range victims {
		a.record(c)
	}
}

// persist writes the batch's git-backed changes as a chain of commits (a
// new commit whenever a key repeats, so every revision's value is in some
// commit's tree), in one durable pack, and moves the branch ref.
func (b *Branch) persist(batch []*writeRequest) error {
	wb := b.git.NewBatch()
	head := b.head
	var ops []commitOp
	var author string // of ops
	var lastGitRev int64
	inCommit := map[string]bool{}
	written := map[string]bool{}
	commit := func(m *mergeIntent) error {
		if len(ops) == 0 && (m == nil || !m.join) {
			return nil
		}
		tree, err := b.mirror.flush(wb)
		if err != nil {
			return err
		}
		var msg string
		parents := []plumbing.Hash{head}
		if m != nil {
			msg, parents = m.message(ops), append(parents, m.second)
		} else {
			msg = commitMessage(ops)
		}
		h, err := wb.AddCommit(b.newCommit(tree, msg, author, parents...))
		if err != nil {
			return err
		}
		if m != nil {
			m.commit = h
		}
		head, ops, inCommit = h, nil, map[string]bool{}
		return nil
	}
	for _, r := range batch {
		if r.merge != nil {
			// A merge is a commit of its own.
			if err := commit(nil); err != nil {
				return err
			}
		}
		if a := r.author(); a != author {
			// One author a commit: git log is who asked for what.
			if err := commit(nil); err != nil {
				return err
			}
			author = a
		}
		for _, c := range r.changes {
			op, ok := b.stage(wb, r, c)
			if !ok {
				continue
			}
			if inCommit[op.stem] {
				if err := commit(nil); err != nil {
					return err
				}
			}
			inCommit[op.stem], written[op.stem] = true, true
			op.rev = r.rev
			ops = append(ops, op)
			lastGitRev = r.rev
		}
		if r.merge != nil {
			if err := commit(r.merge); err != nil {
				return err
			}
		}
	}
	if err := commit(nil); err != nil {
		return err
	}
	if head != b.head {
		began := time.Now()
		if err := b.git.Commit(wb, b.ref, head, b.head); err != nil {
			return err
		}
		if b.opts.OnCommit != nil {
			b.opts.OnCommit(b.name, len(batch), time.Since(began))
		}
		if lastGitRev == 0 {
			// Only commits without writes (a joining merge): git holds
			// the same revision as before.
			lastGitRev = b.chain[b.head]
		}
		b.mu.Lock() // Head() reads head
		b.head, b.tree = head, b.mirror.root.hash
		b.chain[head] = lastGitRev
		for stem := range written {
			b.setProblem(stem, nil) // our file replaced the one not served
		}
		b.mu.Unlock()
		b.noteHead(head, b.latest)
	}
	// Every revision handed out stays below the recorded floor: git may
	// not hold it after a restart (leased keys; a branch moved back before
	// its head was recorded, headstate.go), and it must not be reused.
	return b.raiseFloor(b.latest)
}

// stage puts one change into the tree mirror; ok is false for changes that
// git does not hold (leased keys on both sides).
func (b *Branch) stage(wb *gitrepo.Batch, r *writeRequest, c change) (commitOp, bool) {
	stem := KeyPath(c.key)
	inGit := c.prev != nil && !c.prev.tombstone() && c.prev.ext != ""
	if c.rec.tombstone() || c.rec.lease != 0 {
		if !inGit {
			return commitOp{}, false
		}
		b.dropUnserved(stem)
		b.mirror.set(stem+c.prev.ext, plumbing.ZeroHash)
		return commitOp{kind: opDelete, stem: stem}, true
	}
	b.dropUnserved(stem)
	if e := r.encodedFor(c.rec.value); e != nil {
		c.rec.blob, c.rec.ext = wb.AddEncoded(e.blob), e.ext
	} else {
		content, ext := EncodeValue(c.rec.value)
		c.rec.blob, c.rec.ext = wb.AddBlob(content), ext
	}
	ext := c.rec.ext
	if inGit && c.prev.ext != ext {
		b.mirror.set(stem+c.prev.ext, plumbing.ZeroHash)
	}
	b.mirror.set(stem+ext, c.rec.blob)
	kind := opUpdate
	if !inGit {
		kind = opCreate
	}
	return commitOp{kind: kind, stem: stem}, true
}

// dropUnserved removes from the tree a file of stem that is not served (a
// problem): the key's value is its last good one, which the write being
// staged replaces.
func (b *Branch) dropUnserved(stem string) {
	if p, bad := b.problems[stem]; bad {
		b.mirror.set(p.Path, plumbing.ZeroHash)
	}
}

// newCommit returns a commit of the store, authored by author (a user name)
// or, when empty, by the store itself, which always commits.
func (b *Branch) newCommit(tree plumbing.Hash, msg, author string, parents ...plumbing.Hash) *object.Commit {
	sig := object.Signature{Name: b.opts.AuthorName, Email: b.opts.AuthorEmail, When: time.Now()}
	by := sig
	if author != "" {
		by = object.Signature{Name: authorName(author), Email: "", When: sig.When}
	}
	var ps []plumbing.Hash
	for _, p := range parents {
		if !p.IsZero() {
			ps = append(ps, p)
		}
	}
	return &object.Commit{Author: by, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: ps}
}

// author is who asked for the request's writes ("" for the store).
func (r *writeRequest) author() string {
	if r.txn == nil {
		return ""
	}
	return r.txn.Author
}

// authorName makes a user name fit a git signature, whose name ends at the
// first '<' and whose line ends at a newline.
func authorName(user string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '<', '>', '\n', '\r', 0:
			return '_'
		}
		return r
	}, user)
}

// publish makes the batch visible, tells lease owners, and answers.
func (b *Branch) publish(batch []*writeRequest) {
	b.mu.Lock()
	b.advance(b.latest)
	b.mu.Unlock()
	for _, r := range batch {
		b.leases.track(b, r.changes)
		close(r.done)
	}
}

// advance moves the committed revision and wakes watchers. Caller holds mu.
func (b *Branch) advance(rev int64) {
	if rev <= b.committed {
		return
	}
	b.committed = rev
	close(b.changed)
	b.changed = make(chan struct{})
}

// resetMirror rebuilds the tree mirror from the head commit (after a failed
// write left it patched).
func (b *Branch) resetMirror() error {
	m, err := newTreeMirror(b.git.Storer(), b.tree)
	if err != nil {
		return err
	}
	b.mirror = m
	return nil
}
