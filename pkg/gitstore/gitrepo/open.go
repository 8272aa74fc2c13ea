package gitrepo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const bareConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = true
`

// initIfEmpty creates a bare repository in dir when dir is missing, empty,
// or holds only what an interrupted initIfEmpty left. HEAD is written last:
// git (and Open) take a directory without HEAD for no repository.
func initIfEmpty(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	for _, e := range ents {
		switch n := e.Name(); {
		case n == "objects", n == "refs", n == "config", n == "heaven.lock", strings.HasPrefix(n, tmpPrefix):
		default:
			return fmt.Errorf("%w: %s holds %q but no HEAD", ErrNotRepository, dir, n)
		}
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := mkdirAllDurable(dir, filepath.Join(dir, d)); err != nil {
			return err
		}
	}
	if err := writeFileDurable(filepath.Join(dir, "config"), []byte(bareConfig)); err != nil {
		return err
	}
	return writeFileDurable(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/main\n"))
}

// removeLeftovers deletes what a writer that crashed may have left: our
// temporary files (also a journal being created), our .keep files and the
// pack one guarded if its index never came (place; the journal writes it
// again if its commit needs it), indexes without their pack (a removal
// cut short: packs go first), and ref locks. A pack without its index and
// without our .keep is left alone: it may be git's, between its renames.
// Ref locks, though, may be git's own, which is why no git may write refs
// while Open runs.
func (r *Repo) removeLeftovers() error {
	if err := removeMatching(r.dir, func(n string) bool { return strings.HasPrefix(n, tmpPrefix) }); err != nil {
		return err
	}
	if err := r.removeOurKeeps(); err != nil {
		return err
	}
	if err := removeMatching(r.packDir, func(n string) bool {
		if strings.HasPrefix(n, tmpPrefix) {
			return true
		}
		sum, ok := packName(n, ".idx")
		if !ok {
			return false
		}
		_, err := os.Stat(packPath(r.packDir, sum, ".pack"))
		return errors.Is(err, fs.ErrNotExist)
	}); err != nil {
		return err
	}
	if err := removeMatching(filepath.Join(r.dir, journalDirName), func(n string) bool { return strings.HasPrefix(n, tmpPrefix) }); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Remove(filepath.Join(r.dir, "packed-refs.lock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return filepath.WalkDir(filepath.Join(r.dir, "refs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".lock") {
			return err
		}
		return os.Remove(path)
	})
}

// removeOurKeeps removes the .keep files place left, with their pack
// when it has no index.
func (r *Repo) removeOurKeeps() error {
	ents, err := os.ReadDir(r.packDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		sum, ok := packName(e.Name(), ".keep")
		if !ok {
			continue
		}
		keep, pack := filepath.Join(r.packDir, e.Name()), packPath(r.packDir, sum, ".pack")
		if !isPackFile(keep) {
			continue
		}
		if _, err := os.Stat(packPath(r.packDir, sum, ".idx")); errors.Is(err, fs.ErrNotExist) {
			if err := os.Remove(pack); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := os.Remove(keep); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// isPackFile reports whether path starts as a pack does: our .keep files
// are links to their pack (keepPack); git's hold a line of text or nothing.
func isPackFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == "PACK"
}

func removeMatching(dir string, match func(string) bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() && match(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
