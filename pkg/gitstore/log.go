package gitstore

import (
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// LogEntry is one commit of a branch's history as the store walks it.
type LogEntry struct {
	Commit plumbing.Hash
	// Revision is the branch's revision once the commit was applied (the
	// last one it holds).
	Revision  int64
	Author    object.Signature
	Committer object.Signature
	Message   string
	Parents   []plumbing.Hash
	// Changes are the keys whose files the commit changed, against the
	// commit before it in the branch's history.
	Changes []KeyChange
}

// KeyChange is a change of one key's file.
type KeyChange struct {
	Key, Path string
	// Deleted: the key's file is gone; else it was created or updated.
	Deleted bool
}

// Log lists the branch's history newest first, from commit from (the zero
// hash: the head), walking the chain that gives revisions (historyParent):
// at most limit commits (0: no limit), and with a key prefix only those
// that changed a key under it. next is where to go on from, zero at the
// branch's first commit.
func (b *Branch) Log(from plumbing.Hash, limit int, keyPrefix string) (entries []LogEntry, next plumbing.Hash, err error) {
	if from.IsZero() {
		from = b.Head()
	}
	scratch := &Branch{git: b.git} // lends its tree diff; the writer's trees stay its own
	for h := from; !h.IsZero(); h = next {
		if limit > 0 && len(entries) == limit {
			return entries, h, nil
		}
		c, err := object.GetCommit(b.git.Storer(), h)
		if err != nil {
			return nil, plumbing.ZeroHash, err
		}
		if next, err = b.historyParent(c); err != nil {
			return nil, plumbing.ZeroHash, err
		}
		var parentTree plumbing.Hash
		if !next.IsZero() {
			if parentTree, err = b.repo.treeOf(next); err != nil {
				return nil, plumbing.ZeroHash, err
			}
		}
		diff, err := scratch.diffTrees(parentTree, c.TreeHash)
		if err != nil {
			return nil, plumbing.ZeroHash, err
		}
		e := LogEntry{Commit: h, Author: c.Author, Committer: c.Committer, Message: c.Message, Parents: c.ParentHashes}
		e.Revision, _ = b.revisionOf(c)
		for _, stem := range sortedStems(diff) {
			key, err := PathKey(stem)
			if err != nil || !strings.HasPrefix(key, keyPrefix) {
				continue
			}
			f := diff[stem]
			e.Changes = append(e.Changes, KeyChange{Key: key, Path: stem + f.ext, Deleted: f.blob.IsZero()})
		}
		if keyPrefix != "" && len(e.Changes) == 0 {
			continue
		}
		entries = append(entries, e)
	}
	return entries, plumbing.ZeroHash, nil
}
