package gitstore

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// Reading commits of any branch: what a merge needs of its base, target and
// source. Only keys git holds are seen (leased keys live in memory), and
// values are exactly what Range returns for them (DecodeValue).

// Snapshot returns every key of commit's tree with its value. Files that
// can't be served (Options.ReadFile) are left out and listed in a
// *FileErrors returned with the rest (IsFileErrors).
func (r *Repository) Snapshot(commit plumbing.Hash) (map[string][]byte, error) {
	root, err := r.treeOf(commit)
	if err != nil {
		return nil, err
	}
	files := map[string]fileState{}
	t := newTreeReader(r.git.Storer())
	if err := t.walk(files, "", root); err != nil {
		return nil, err
	}
	return r.readFiles(commit, files)
}

// Values returns the values of keys at commit; keys absent there are absent
// from the map, and so are keys whose files can't be served: they are
// listed in a *FileErrors returned with the rest (IsFileErrors).
func (r *Repository) Values(commit plumbing.Hash, keys []string) (map[string][]byte, error) {
	root, err := r.treeOf(commit)
	if err != nil {
		return nil, err
	}
	t := newTreeReader(r.git.Storer())
	files := make(map[string]fileState, len(keys))
	for _, k := range keys {
		f, err := t.find(root, KeyPath(k))
		if err != nil {
			return nil, err
		}
		if !f.blob.IsZero() {
			files[KeyPath(k)] = f
		}
	}
	return r.readFiles(commit, files)
}

// ChangedKeys returns, sorted, the keys whose values differ between two
// commits (created, changed or deleted). A zero from is the empty tree.
// Directories that did not change are not read.
func (r *Repository) ChangedKeys(from, to plumbing.Hash) ([]string, error) {
	var fromTree, toTree plumbing.Hash
	var err error
	if !from.IsZero() {
		if fromTree, err = r.treeOf(from); err != nil {
			return nil, err
		}
	}
	if toTree, err = r.treeOf(to); err != nil {
		return nil, err
	}
	// A scratch Branch lends its tree diff (history.go); nothing else of it
	// is used.
	diff, err := (&Branch{git: r.git}).diffTrees(fromTree, toTree)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(diff))
	for _, stem := range sortedStems(diff) {
		if k, err := PathKey(stem); err == nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

func (r *Repository) treeOf(commit plumbing.Hash) (plumbing.Hash, error) {
	c, err := object.GetCommit(r.git.Storer(), commit)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", commit, err)
	}
	return c.TreeHash, nil
}

// readKey names a value readFiles made: what ReadFile made of a blob at a
// key, in a file of an extension.
type readKey struct {
	blob     plumbing.Hash
	key, ext string
}

// readFiles reads value files by stem into values by key, with
// Options.ReadFile: a commit's files may have been pushed by anyone. Stems
// that are not keys are skipped; files that can't be served are left out
// and listed in a *FileErrors, returned with the values that could be
// read.
func (r *Repository) readFiles(commit plumbing.Hash, files map[string]fileState) (map[string][]byte, error) {
	out := make(map[string][]byte, len(files))
	var bad []FileProblem
	for stem, f := range files {
		key, err := PathKey(stem)
		if err != nil {
			continue
		}
		cacheKey := readKey{blob: f.blob, key: key, ext: f.ext}
		if v, ok := r.read.Get(cacheKey); ok {
			out[key] = v.([]byte)
			continue
		}
		content, err := readBlob(r.git, f.blob)
		if err != nil {
			return nil, err
		}
		v, err := r.opts.ReadFile(key, content, f.ext)
		if err != nil {
			bad = append(bad, FileProblem{Path: stem + f.ext, Key: key, Commit: commit, Err: err.Error()})
			continue
		}
		r.read.Add(cacheKey, v)
		out[key] = v
	}
	if len(bad) > 0 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].Path < bad[j].Path })
		return out, &FileErrors{Problems: bad}
	}
	return out, nil
}

// treeReader reads the trees of one snapshot, each once.
type treeReader struct {
	objects storer.EncodedObjectStorer
	trees   map[plumbing.Hash][]object.TreeEntry
}

func newTreeReader(objects storer.EncodedObjectStorer) *treeReader {
	return &treeReader{objects: objects, trees: map[plumbing.Hash][]object.TreeEntry{}}
}

func (t *treeReader) entries(h plumbing.Hash) ([]object.TreeEntry, error) {
	if e, ok := t.trees[h]; ok {
		return e, nil
	}
	e, err := readTree(t.objects, h)
	if err != nil {
		return nil, err
	}
	t.trees[h] = e
	return e, nil
}

// walk collects the value files below tree h, by stem. A key with files of
// several extensions is the first in valueExts order, as in diffTrees.
func (t *treeReader) walk(out map[string]fileState, dir string, h plumbing.Hash) error {
	entries, err := t.entries(h)
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch {
		case e.Mode == filemode.Dir:
			if err := t.walk(out, dir+e.Name+"/", e.Hash); err != nil {
				return err
			}
		case e.Mode.IsFile():
			stem, ext, ok := splitExt(e.Name)
			if !ok {
				continue
			}
			if cur, seen := out[dir+stem]; !seen || extRank(ext) < extRank(cur.ext) {
				out[dir+stem] = fileState{ext: ext, blob: e.Hash}
			}
		}
	}
	return nil
}

// find returns the value file of stem in tree root (a zero blob when
// there is none).
func (t *treeReader) find(root plumbing.Hash, stem string) (fileState, error) {
	parts := strings.Split(stem, "/")
	h := root
	for _, dir := range parts[:len(parts)-1] {
		entries, err := t.entries(h)
		if err != nil {
			return fileState{}, err
		}
		e, ok := entryNamed(entries, dir+"/")
		if !ok {
			return fileState{}, nil
		}
		h = e.Hash
	}
	entries, err := t.entries(h)
	if err != nil {
		return fileState{}, err
	}
	name := parts[len(parts)-1]
	for _, ext := range valueExts {
		if e, ok := entryNamed(entries, name+ext); ok {
			return fileState{ext: ext, blob: e.Hash}, nil
		}
	}
	return fileState{}, nil
}

// entryNamed finds an entry by its git sort name ("dir/" for directories)
// in entries sorted in git order.
func entryNamed(entries []object.TreeEntry, sortName string) (object.TreeEntry, bool) {
	i := sort.Search(len(entries), func(i int) bool { return gitName(entries[i]) >= sortName })
	if i < len(entries) && gitName(entries[i]) == sortName {
		e := entries[i]
		if strings.HasSuffix(sortName, "/") == (e.Mode == filemode.Dir) && (e.Mode == filemode.Dir || e.Mode.IsFile()) {
			return e, true
		}
	}
	return object.TreeEntry{}, false
}
