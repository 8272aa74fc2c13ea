package gitstore

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The branch ref is the store's only record of its head, and anyone with
// the repository can move it: a force-push answered while the store runs
// is merged (reconcile), but one made while it is down, or just before a
// crash, would send the next rebuild down an older history, with fewer
// revisions than clients were given and without the writes made since.
// So the store also records its head, with its revision, in a state file
// beside the repository: every headStateInterval for open branches that
// moved, and when a branch closes. On open, a recorded head that is not in
// the ref's history means the ref was moved back or sideways meanwhile:
// the branch is rebuilt from the recorded head and the ref's commit is
// picked up as it would have been live, as a merge at the next revision.
//
// Each commit is also noted before its writes are acknowledged, without
// fsync (noteHead): if the process dies, the record names the last commit;
// only if the machine dies may it lag, by up to headStateInterval. A move
// back past a lagging record before a crash is not recognised (the writes
// of that window are then left out of the branch), and the revisions of
// that window are not in git any more. So a record written when the branch
// closes in order says so ("closed"): the branch reopens at exactly its
// recorded revision. After a crash it reopens at the revision floor
// (branchstate.go), above every revision handed out.

const headState = "head"

// recordedHead is what the head state file holds.
type recordedHead struct {
	commit   plumbing.Hash
	revision int64
	closed   bool // recorded when the branch closed in order
}

const closedMark = "closed"

func (b *Branch) readHead() (recordedHead, error) {
	data, err := b.git.ReadState(b.stateName(headState))
	if err != nil || data == nil {
		return recordedHead{}, err
	}
	// The record is a hint: one that can't be read is no record, and the
	// ref is served as it is.
	f := strings.Fields(string(data))
	closed := len(f) == 3 && f[2] == closedMark
	if closed {
		f = f[:2]
	}
	var rev int64
	if len(f) == 2 && plumbing.IsHash(f[0]) {
		rev, err = strconv.ParseInt(f[1], 10, 64)
	}
	if len(f) != 2 || !plumbing.IsHash(f[0]) || err != nil {
		b.log.Error(nil, "Ignoring a malformed head record", "state", b.stateName(headState), "content", string(data))
		return recordedHead{}, nil
	}
	return recordedHead{plumbing.NewHash(f[0]), rev, closed}, nil
}

// recordHead writes the branch's head and revision if they changed since
// the last record; closed says the branch has stopped (its writer is done).
// Safe to call from any goroutine.
func (b *Branch) recordHead(closed bool) error {
	b.headMu.Lock()
	defer b.headMu.Unlock()
	if closed {
		defer b.closeNote()
	}
	b.mu.RLock() // under headMu: no older head is written after a newer one
	h := recordedHead{b.head, b.committed, closed}
	b.mu.RUnlock()
	if h.commit.IsZero() || h == b.recorded {
		return nil
	}
	return b.writeHead(h)
}

// noteHead records a commit of ours, at revision rev, before its writes
// are acknowledged, without fsync: rewritten in place in the file writeHead
// replaces, kept open between commits. Called by the writer.
func (b *Branch) noteHead(commit plumbing.Hash, rev int64) {
	b.headMu.Lock()
	defer b.headMu.Unlock()
	if err := b.writeNote(headLine(recordedHead{commit: commit, revision: rev})); err != nil {
		b.closeNote()
		b.log.Error(err, "Noting the branch's head failed; it is recorded every few seconds")
		return
	}
	b.recorded = recordedHead{} // not durable: the next recordHead writes
}

// noteSize is the size of every note: more than any head line (a hash, a
// revision, the closed mark), so that a note covers a record writeHead
// left; the rest is spaces, which readHead skips.
const noteSize = 96

func (b *Branch) writeNote(line []byte) error {
	if b.note == nil {
		f, err := b.git.OpenStateVolatile(b.stateName(headState))
		if err != nil {
			return err
		}
		b.note = f
	}
	record := fmt.Sprintf("%-*s\n", noteSize-1, bytes.TrimSuffix(line, []byte("\n")))
	_, err := b.note.WriteAt([]byte(record), 0)
	return err
}

// closeNote closes the file noteHead writes; under headMu.
func (b *Branch) closeNote() {
	if b.note != nil {
		_ = b.note.Close()
		b.note = nil
	}
}

func (b *Branch) writeHead(h recordedHead) error {
	b.closeNote() // the file is replaced: notes go to the new one
	if err := b.writeStateBytes(headState, headLine(h)); err != nil {
		return err
	}
	b.recorded = h
	return nil
}

func headLine(h recordedHead) []byte {
	line := fmt.Sprintf("%s %d", h.commit, h.revision)
	if h.closed {
		line += " " + closedMark
	}
	return []byte(line + "\n")
}

// reopenAt says where revisions go on from when the branch opens: exactly
// after the recorded revision if the branch closed in order (the record
// then stops saying so, before any revision is handed out), else above
// floor. Called on open, after rebuildFromRecordedHead.
func (b *Branch) reopenAt(floor int64) (int64, error) {
	rec := b.recorded
	if !rec.closed {
		return floor, nil
	}
	rec.closed = false
	b.headMu.Lock()
	defer b.headMu.Unlock()
	return rec.revision, b.writeHead(rec)
}

// rebuildFromRecordedHead is called on open after the index was rebuilt
// from the ref: if the recorded head is not in that history, the ref was
// moved back or sideways while the store was not watching, and the branch
// is rebuilt from the recorded head instead; the ref's commit is then
// picked up by the writer as any move from outside. It reports whether it
// rebuilt.
func (b *Branch) rebuildFromRecordedHead() (bool, error) {
	rec, err := b.readHead()
	if err != nil || rec.commit.IsZero() {
		return false, err
	}
	b.recorded = rec
	if _, inHistory := b.chain[rec.commit]; inHistory || rec.commit == b.head {
		return false, nil
	}
	if _, err := object.GetCommit(b.git.Storer(), rec.commit); err != nil {
		b.log.Error(err, "The branch was moved back while the store was not watching, and its recorded head is gone; serving the branch as it is", "recorded", rec.commit)
		return false, nil
	}
	b.log.Info("The branch was moved back or sideways while the store was not watching; rebuilding from the recorded head and merging the branch's commit on top",
		"recorded", rec.commit, "recordedRevision", rec.revision, "ref", b.head)
	b.resetIndex()
	return true, b.rebuildFrom(rec.commit)
}
