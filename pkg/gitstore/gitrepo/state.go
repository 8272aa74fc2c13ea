package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// stateDir holds small files of the repository's users (and our journal):
// a directory git does not look at.
const stateDir = "heaven"

// WriteState replaces the state file name (a slash-separated path below
// <repo>/heaven/) atomically and durably.
func (r *Repo) WriteState(name string, data []byte) error {
	path := filepath.Join(r.dir, stateDir, filepath.FromSlash(name))
	if err := mkdirAllDurable(r.dir, filepath.Dir(path)); err != nil {
		return err
	}
	return writeFileDurable(path, data)
}

// OpenStateVolatile opens state file name to be rewritten in place, without
// syncing, creating it (and its directory) when missing: for a record
// rewritten at every commit, where creating and renaming a file each time
// costs more than the commit. Each rewrite is one WriteAt at offset 0 of
// a record of one fixed size, longer than whatever WriteState put there: a
// write that small, inside one page, outlives the process (kill -9) whole or
// not at all. WriteState replaces the file (a new inode): reopen after it.
func (r *Repo) OpenStateVolatile(name string) (*os.File, error) {
	path := filepath.Join(r.dir, stateDir, filepath.FromSlash(name))
	if err := mkdirAllDurable(r.dir, filepath.Dir(path)); err != nil {
		return nil, err
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
}

// ReadState returns the state file name, or nil when there is none.
func (r *Repo) ReadState(name string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, stateDir, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
