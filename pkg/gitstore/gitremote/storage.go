package gitremote

import (
	"errors"
	"io"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// fetchStorage is the object storage go-git's pack parser writes a fetched
// pack into.
//
// gitrepo writes objects in batches (its Storer is read-only for
// objects), so the objects are collected in a Batch, readable at once
// (the parser reads delta bases back, some of them from the repository:
// thin packs), and written as one durable pack by flush, before any ref
// names them.
type fetchStorage struct {
	repo *gitrepo.Repo
	base storer.EncodedObjectStorer

	mu      sync.Mutex
	batch   *gitrepo.Batch
	pending map[plumbing.Hash]plumbing.EncodedObject
}

var _ storer.EncodedObjectStorer = (*fetchStorage)(nil)

func newStorage(repo *gitrepo.Repo) *fetchStorage {
	return &fetchStorage{repo: repo, base: repo.Storer(), batch: repo.NewBatch(), pending: map[plumbing.Hash]plumbing.EncodedObject{}}
}

// flush writes the collected objects durably.
func (s *fetchStorage) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	if err := s.repo.Write(s.batch); err != nil {
		return err
	}
	s.batch, s.pending = s.repo.NewBatch(), map[plumbing.Hash]plumbing.EncodedObject{}
	return nil
}

func (s *fetchStorage) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (s *fetchStorage) SetEncodedObject(o plumbing.EncodedObject) (plumbing.Hash, error) {
	r, err := o.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	data, err := io.ReadAll(r)
	_ = r.Close()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	m := &plumbing.MemoryObject{}
	m.SetType(o.Type())
	if _, err := m.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.batch.Add(o.Type(), data)
	s.pending[h] = m
	return h, nil
}

func (s *fetchStorage) pendingObject(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.pending[h]
	return o, ok
}

// EncodedObject returns plumbing.ErrObjectNotFound unwrapped, as go-git
// compares it with ==.
func (s *fetchStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := s.pendingObject(h); ok {
		if t != plumbing.AnyObject && o.Type() != t {
			return nil, plumbing.ErrObjectNotFound
		}
		return o, nil
	}
	return s.base.EncodedObject(t, h)
}

func (s *fetchStorage) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := s.pendingObject(h); ok {
		return nil
	}
	return s.base.HasEncodedObject(h)
}

func (s *fetchStorage) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if o, ok := s.pendingObject(h); ok {
		return o.Size(), nil
	}
	return s.base.EncodedObjectSize(h)
}

func (s *fetchStorage) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	return s.base.IterEncodedObjects(t)
}

func (s *fetchStorage) AddAlternate(string) error {
	return errors.New("gitremote: alternates are not supported")
}
