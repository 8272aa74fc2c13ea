package gitrepo

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// ErrReadOnly: go-git tried to write objects through Storer; objects are
// written in batches with Write.
var ErrReadOnly = errors.New("gitrepo: Storer does not write objects; use Batch and Repo.Write")

// repoStorer is go-git's view of a Repo. It holds no state of its own,
// so it is as safe for concurrent use as the Repo.
type repoStorer struct{ r *Repo }

var _ storer.Storer = (*repoStorer)(nil)

func (s *repoStorer) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (s *repoStorer) SetEncodedObject(plumbing.EncodedObject) (plumbing.Hash, error) {
	return plumbing.ZeroHash, ErrReadOnly
}

// EncodedObject returns plumbing.ErrObjectNotFound, unwrapped as go-git
// expects, when h is missing or not of type t.
func (s *repoStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.r.object(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && o.t != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

func (s *repoStorer) HasEncodedObject(h plumbing.Hash) error { return s.r.has(h) }

func (s *repoStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	o, err := s.r.object(h)
	if err != nil {
		return 0, err
	}
	return o.Size(), nil
}

func (s *repoStorer) AddAlternate(string) error {
	return fmt.Errorf("gitrepo: alternates are not supported")
}

// IterEncodedObjects lists the objects present now and reads them lazily.
func (s *repoStorer) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	hashes, err := s.r.allHashes()
	if err != nil {
		return nil, err
	}
	return &objectIter{r: s.r, t: t, hashes: hashes}, nil
}

type objectIter struct {
	r      *Repo
	t      plumbing.ObjectType
	hashes []plumbing.Hash
}

func (it *objectIter) Next() (plumbing.EncodedObject, error) {
	for len(it.hashes) > 0 {
		h := it.hashes[0]
		it.hashes = it.hashes[1:]
		o, err := it.r.object(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			continue // removed since listed (git gc)
		}
		if err != nil {
			return nil, err
		}
		if it.t == plumbing.AnyObject || o.t == it.t {
			return o, nil
		}
	}
	return nil, io.EOF
}

func (it *objectIter) ForEach(cb func(plumbing.EncodedObject) error) error {
	return storer.ForEachIterator(it, cb)
}

func (it *objectIter) Close() { it.hashes = nil }
