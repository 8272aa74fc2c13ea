package gitstore

import (
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// readTree reads a tree's entries. It parses the raw object itself: go-git's
// decoder reads through bufio line by line, which made rebuilding a branch's
// index (two trees per directory per commit) several times slower.
func readTree(objects storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	o, err := objects.EncodedObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, err
	}
	entries, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", h, err)
	}
	return entries, nil
}

// parseTree decodes "<octal mode> <name>\0<20-byte hash>" entries.
func parseTree(data []byte) ([]object.TreeEntry, error) {
	entries := make([]object.TreeEntry, 0, bytes.Count(data, []byte{0}))
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		nul := bytes.IndexByte(data, 0)
		if sp < 0 || nul < sp || len(data) < nul+1+20 {
			return nil, fmt.Errorf("malformed tree entry")
		}
		mode, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree entry mode %q: %w", data[:sp], err)
		}
		e := object.TreeEntry{Name: string(data[sp+1 : nul]), Mode: filemode.FileMode(mode)}
		copy(e.Hash[:], data[nul+1:nul+21])
		entries = append(entries, e)
		data = data[nul+21:]
	}
	return entries, nil
}
