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

// WriteStateVolatile replaces the state file name atomically, without
// syncing: what it writes outlives the process (kill -9), not the machine.
func (r *Repo) WriteStateVolatile(name string, data []byte) error {
	path := filepath.Join(r.dir, stateDir, filepath.FromSlash(name))
	if err := mkdirAllDurable(r.dir, filepath.Dir(path)); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ReadState returns the state file name, or nil when there is none.
func (r *Repo) ReadState(name string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(r.dir, stateDir, filepath.FromSlash(name)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
