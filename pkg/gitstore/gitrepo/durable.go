package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Durability on POSIX file systems: a file's contents survive power loss
// once the file is fsynced; its name (creation, rename, removal) once its
// directory is fsynced. go-git does neither, which is why this package
// writes files itself.

// syncDir makes the entries of dir (new, renamed or removed names) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirAllDurable creates dir and its missing parents below root, fsyncing
// the parent of every directory it creates, so that a file later made
// durable inside dir is reachable after a crash.
func mkdirAllDurable(root, dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		return nil
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrInvalid}
	}
	parent := filepath.Dir(dir)
	if err := mkdirAllDurable(root, parent); err != nil {
		return err
	}
	// Someone else (git itself) may create the same directory meanwhile.
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// writeFileDurable replaces path with data atomically and durably: a
// temporary file is written and fsynced, renamed over path, and the
// directory fsynced.
func writeFileDurable(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tmpPrefix+"file_")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}
