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
	z    []byte        // data's zlib stream when compressed ahead (Encoded), else nil
	prev plumbing.Hash // the tree's previous version (AddTreeVersion), else zero
	own  bool          // data was encoded by the batch (AddTree): ours to keep
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

// Encoded is an object named and compressed ahead of the batch that
// stores it (EncodeBlob), so that a writer assembling batches from many
// callers' objects does not do that work itself. Immutable.
type Encoded struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
	z    []byte
}

// EncodeBlob names a file's content and encodes it as a pack stores it
// (deflate); any goroutine may call it. The content must not change
// afterwards.
func EncodeBlob(data []byte) *Encoded {
	return &Encoded{h: hashObject(plumbing.BlobObject, data), t: plumbing.BlobObject, data: data, z: deflate(data)}
}

// Hash returns the object's name.
func (e *Encoded) Hash() plumbing.Hash { return e.h }

// Data returns the object's content.
func (e *Encoded) Data() []byte { return e.data }

// AddEncoded adds an object encoded ahead (see Add). Its compressed form
// is used unless the batch stores it as a delta.
func (b *Batch) AddEncoded(e *Encoded) plumbing.Hash {
	if _, ok := b.seen[e.h]; !ok {
		b.seen[e.h] = struct{}{}
		b.objs = append(b.objs, batchObject{h: e.h, t: e.t, data: e.data, z: e.z})
		b.size += len(e.data)
	}
	return e.h
}

// AddBlob adds a file's content (see Add).
func (b *Batch) AddBlob(data []byte) plumbing.Hash { return b.Add(plumbing.BlobObject, data) }

// AddTree encodes and adds a tree; see AppendTree for what it checks.
func (b *Batch) AddTree(t *object.Tree) (plumbing.Hash, error) {
	return b.AddTreeVersion(t, plumbing.ZeroHash)
}

// AddTreeVersion is AddTree for a new version of the tree prev (zero:
// none), typically the same directory in the previous commit. Naming it
// lets a pack store the tree as a delta against a version an earlier
// batch wrote (versions.go) instead of compressing it whole.
func (b *Batch) AddTreeVersion(t *object.Tree, prev plumbing.Hash) (plumbing.Hash, error) {
	data, err := AppendTree(nil, t.Entries)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	n := len(b.objs)
	h := b.Add(plumbing.TreeObject, data)
	if len(b.objs) > n { // new to the batch
		b.objs[n].prev, b.objs[n].own = prev, true
	}
	return h, nil
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
