package gitrepo

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// go-git's storer.ReferenceStorer over the durable reference code: what
// go-git writes through Storer is as durable as CompareAndSwapRef.

func anyValue(refValue, bool) error { return nil }

func valueOf(ref *plumbing.Reference) *refValue {
	if ref.Type() == plumbing.SymbolicReference {
		return &refValue{target: ref.Target()}
	}
	return &refValue{hash: ref.Hash()}
}

func (s *repoStorer) SetReference(ref *plumbing.Reference) error {
	return s.r.updateRef(ref.Name(), anyValue, valueOf(ref))
}

// CheckAndSetReference sets ref if the stored value of ref's name equals
// old's; the error then satisfies both ErrRefChanged and go-git's
// storage.ErrReferenceHasChanged.
func (s *repoStorer) CheckAndSetReference(ref, old *plumbing.Reference) error {
	if old == nil {
		return s.SetReference(ref)
	}
	want := valueOf(old)
	return s.r.updateRef(ref.Name(), func(cur refValue, exists bool) error {
		if !exists || cur != *want {
			return fmt.Errorf("%w: %w: %s", storage.ErrReferenceHasChanged, ErrRefChanged, ref.Name())
		}
		return nil
	}, valueOf(ref))
}

func (s *repoStorer) Reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	if err := checkRefName(name); err != nil {
		return nil, err
	}
	v, ok, err := s.r.readRef(name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, plumbing.ErrReferenceNotFound
	}
	if v.target != "" {
		return plumbing.NewSymbolicReference(name, v.target), nil
	}
	return plumbing.NewHashReference(name, v.hash), nil
}

// IterReferences lists HEAD and every ref under refs/, loose and packed.
func (s *repoStorer) IterReferences() (storer.ReferenceIter, error) {
	names, err := s.r.refNames("refs/", true)
	if err != nil {
		return nil, err
	}
	var refs []*plumbing.Reference
	for _, n := range append([]plumbing.ReferenceName{plumbing.HEAD}, names...) {
		ref, err := s.Reference(n)
		if errors.Is(err, plumbing.ErrReferenceNotFound) {
			continue // deleted since listed
		}
		if err != nil {
			return nil, err
		}
		refs = append(refs, ref)
	}
	return storer.NewReferenceSliceIter(refs), nil
}

func (s *repoStorer) RemoveReference(name plumbing.ReferenceName) error {
	return s.r.updateRef(name, anyValue, nil)
}

func (s *repoStorer) CountLooseRefs() (int, error) {
	names, err := s.r.refNames("refs/", false)
	return len(names), err
}

// PackRefs does nothing: loose refs are what CompareAndSwapRef writes
// durably; git gc or git pack-refs may pack them.
func (s *repoStorer) PackRefs() error { return nil }
