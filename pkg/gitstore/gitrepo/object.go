package gitrepo

import (
	"bytes"
	"errors"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
)

var errImmutable = errors.New("gitrepo: objects read from the repository are immutable")

// object is an object read from the repository. It is immutable, so the
// cache hands the same one to every reader, and it knows its name, so
// go-git's decoders (which call Hash) never rehash the content.
type storedObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

var _ plumbing.EncodedObject = (*storedObject)(nil)

func (o *storedObject) Hash() plumbing.Hash       { return o.h }
func (o *storedObject) Type() plumbing.ObjectType { return o.t }
func (o *storedObject) Size() int64               { return int64(len(o.data)) }

// Reader returns a reader that can also Seek and ReadAt, like go-git's
// MemoryObject's.
func (o *storedObject) Reader() (io.ReadCloser, error) {
	return readCloser{bytes.NewReader(o.data)}, nil
}

// SetType, SetSize and Writer exist for the interface; objects read from
// the repository are shared and must not change, so they panic or fail.
func (o *storedObject) SetType(plumbing.ObjectType)     { panic(errImmutable) }
func (o *storedObject) SetSize(int64)                   { panic(errImmutable) }
func (o *storedObject) Writer() (io.WriteCloser, error) { return nil, errImmutable }

type readCloser struct{ *bytes.Reader }

func (readCloser) Close() error { return nil }
