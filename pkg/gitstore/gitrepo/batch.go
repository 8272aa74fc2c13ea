package gitrepo

import (
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Batch collects objects to write together, as one pack. Adding returns
// the object's name at once, so trees and commits can refer to what was
// added before. A Batch is not safe for concurrent use.
type Batch struct {
	objs []batchObject
	seen map[plumbing.Hash]struct{}
	size int
}

type batchObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

// NewBatch returns an empty batch.
func (r *Repo) NewBatch() *Batch {
	return &Batch{seen: map[plumbing.Hash]struct{}{}}
}

// Add adds an object of type t (commit, tree, blob or tag) with the given
// content, which the batch keeps without copying: it must not change
// until Write returns. Adding the same object twice stores it once.
func (b *Batch) Add(t plumbing.ObjectType, data []byte) plumbing.Hash {
	if t < plumbing.CommitObject || t > plumbing.TagObject {
		panic("gitrepo: Batch.Add of a " + t.String())
	}
	h := hashObject(t, data)
	if _, ok := b.seen[h]; !ok {
		b.seen[h] = struct{}{}
		b.objs = append(b.objs, batchObject{h: h, t: t, data: data})
		b.size += len(data)
	}
	return h
}

// AddBlob adds a file's content (see Add).
func (b *Batch) AddBlob(data []byte) plumbing.Hash { return b.Add(plumbing.BlobObject, data) }

// AddTree encodes and adds a tree; see AppendTree for what it checks.
func (b *Batch) AddTree(t *object.Tree) (plumbing.Hash, error) {
	data, err := AppendTree(nil, t.Entries)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.Add(plumbing.TreeObject, data), nil
}

// AddCommit encodes (with go-git: a commit is small) and adds a commit.
func (b *Batch) AddCommit(c *object.Commit) (plumbing.Hash, error) {
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	rd, _ := o.Reader()
	data, err := io.ReadAll(rd)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return b.Add(plumbing.CommitObject, data), nil
}

// Len returns the number of distinct objects added.
func (b *Batch) Len() int { return len(b.objs) }

// Size returns the bytes of content added, before compression.
func (b *Batch) Size() int { return b.size }

// hashObject names an object as git does, with go-git's hasher: SHA-1 with
// collision detection, like git's own (see README.md for its cost).
func hashObject(t plumbing.ObjectType, data []byte) plumbing.Hash {
	return plumbing.ComputeHash(t, data)
}
