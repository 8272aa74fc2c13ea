package gitstore

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ErrHeadMoved is returned by Branch.Merge when the branch has taken writes
// since the head the merge was computed against: nothing was written, and
// the caller computes the merge again on the new head.
var ErrHeadMoved = errors.New("gitstore: branch head moved since the merge was computed")

// MergeRequest is the result of a merge, computed by the caller against
// ExpectedHead, to be written as one merge commit.
type MergeRequest struct {
	// ExpectedHead is the branch head the merge was computed against; the
	// merge is written only if the branch is still there.
	ExpectedHead plumbing.Hash
	// SecondParent is the commit merged in (the source's head). It must be
	// in the repository.
	SecondParent plumbing.Hash
	// Puts are the keys to write, with their values as Range returns them.
	Puts map[string][]byte
	// Deletes are the keys to delete.
	Deletes []string
	// Message is the commit's subject (its first line counts); the store
	// adds a line per write and the revision trailer (commitmsg.go).
	Message string
	// Join writes the merge commit even when it has no changes, so that
	// SecondParent becomes part of the branch's history: a git remote the
	// branch is pushed to takes only a head that descends from its own.
	// A merge commit without changes takes no revision and no watcher
	// sees it, as a pushed commit that changes no value file.
	Join bool
	// Author is who the merge is made for (a Kubernetes user name); empty:
	// the store's own signature.
	Author string
}

// MergeResult says what Merge wrote.
type MergeResult struct {
	// Commit is the merge commit, zero when nothing was written.
	Commit plumbing.Hash
	// Revision is the revision of the merge's writes (the branch's
	// revision when nothing was written).
	Revision int64
}

// mergeIntent rides on a writeRequest: the request is a merge whose commit
// has two parents and its own message.
type mergeIntent struct {
	expected plumbing.Hash
	second   plumbing.Hash
	subject  string
	join     bool          // written even without changes (MergeRequest.Join)
	commit   plumbing.Hash // set by persist: the merge commit
}

// Merge writes the changes of a merge as one commit whose parents are the
// branch head and req.SecondParent. It goes through the branch's writer like
// any transaction: serialised with other writes, durable before it returns,
// and seen by watchers as ordinary events, all at one new revision (as a
// multi-op Txn): a put keeps the key's create revision and bumps its
// version, a put of a new key creates it, a delete ends it. The commit's
// message names that revision, so a restart rebuilds the same revisions.
//
// If the branch took any write since req.ExpectedHead, Merge writes
// nothing and returns ErrHeadMoved: a write that landed meanwhile is never
// overwritten by a merge computed without it. A request without changes
// writes nothing, unless it is to Join. A branch without commits cannot
// take a merge (its first parent would be missing).
func (b *Branch) Merge(ctx context.Context, req MergeRequest) (MergeResult, error) {
	if len(req.Puts) == 0 && len(req.Deletes) == 0 && !req.Join {
		return MergeResult{Revision: b.Revision()}, nil
	}
	if req.ExpectedHead.IsZero() {
		return MergeResult{}, fmt.Errorf("gitstore: merge into branch %s without commits", b.name)
	}
	if req.SecondParent.IsZero() {
		return MergeResult{}, errors.New("gitstore: merge without a second parent")
	}
	if _, err := object.GetCommit(b.git.Storer(), req.SecondParent); err != nil {
		return MergeResult{}, fmt.Errorf("gitstore: merged commit %s: %w", req.SecondParent, err)
	}
	txn, err := mergeTxn(req)
	if err != nil {
		return MergeResult{}, err
	}
	m := &mergeIntent{expected: req.ExpectedHead, second: req.SecondParent, subject: mergeSubject(req), join: req.Join}
	resp, err := b.submit(ctx, &writeRequest{txn: txn, merge: m})
	if err != nil {
		return MergeResult{}, err
	}
	return MergeResult{Commit: m.commit, Revision: resp.Revision}, nil
}

// mergeTxn turns a merge's changes into one transaction, in key order.
func mergeTxn(req MergeRequest) (*Txn, error) {
	keys := make([]string, 0, len(req.Puts))
	for k := range req.Puts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	deletes := append([]string(nil), req.Deletes...)
	sort.Strings(deletes)
	txn := &Txn{Author: req.Author}
	for _, k := range keys {
		if k == "" {
			return nil, ErrEmptyKey
		}
		v := req.Puts[k]
		if v == nil {
			v = []byte{}
		}
		txn.Then = append(txn.Then, Op{Put: &PutOp{Key: k, Value: v}})
	}
	for i, k := range deletes {
		if _, put := req.Puts[k]; put || (i > 0 && deletes[i-1] == k) {
			return nil, fmt.Errorf("%w: %s", ErrDuplicateKey, k)
		}
		if k == "" {
			return nil, ErrEmptyKey
		}
		txn.Then = append(txn.Then, Op{Delete: &DeleteOp{Key: k}})
	}
	return txn, nil
}

func mergeSubject(req MergeRequest) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(req.Message), "\n")
	if subject = strings.TrimSpace(subject); subject == "" {
		subject = "merge " + req.SecondParent.String()[:12]
	}
	return subject
}

// message renders the merge commit's message: the subject, then a line per
// write (always, even for one, since the subject is not one of ours) and
// the revision trailer, as parseCommitOps reads them back. A merge without
// writes (Join) is its subject alone: no trailer, so no revision.
func (m *mergeIntent) message(ops []commitOp) string {
	var s strings.Builder
	s.WriteString(m.subject)
	s.WriteString("\n")
	if len(ops) == 0 {
		return s.String()
	}
	s.WriteString("\n")
	for _, op := range ops {
		fmt.Fprintf(&s, "%d %s %s\n", op.rev, op.kind, op.stem)
	}
	fmt.Fprintf(&s, "\n%s%d\n", revisionTrailer, ops[len(ops)-1].rev)
	return s.String()
}

// begin starts evaluating the merge: ErrHeadMoved when the branch is no
// longer at the head the merge was computed against, because the head
// moved or an earlier request of the same batch changed something (its
// commit would come first). Writer-only.
func (m *mergeIntent) begin(head plumbing.Hash, earlierChanges bool) error {
	m.commit = plumbing.ZeroHash // from an attempt that failed to commit
	if head != m.expected || earlierChanges {
		return ErrHeadMoved
	}
	return nil
}

// notifyHead tells Options.OnHead that the head moved from before.
// Writer-only; called once the new revision is visible.
func (b *Branch) notifyHead(before plumbing.Hash) {
	if b.opts.OnHead != nil && b.head != before {
		b.opts.OnHead(b.name, b.head)
	}
}
