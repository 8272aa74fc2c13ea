package gitrepo

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Branches returns the names of the branches (without "refs/heads/"),
// loose and packed, sorted.
func (r *Repo) Branches() ([]string, error) {
	names, err := r.refNames("refs/heads/", true)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.TrimPrefix(string(n), "refs/heads/")
	}
	return out, nil
}

// refNames lists the refs whose names start with prefix, a directory such
// as "refs/" or "refs/heads/", loose (and packed if withPacked), sorted.
func (r *Repo) refNames(prefix string, withPacked bool) ([]plumbing.ReferenceName, error) {
	seen := map[plumbing.ReferenceName]struct{}{}
	for _, n := range r.held.names(prefix) { // a new ref may not be on disk yet
		seen[n] = struct{}{}
	}
	root := filepath.Join(r.dir, filepath.FromSlash(prefix))
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while we walk
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(r.dir, path)
		if err != nil {
			return err
		}
		if name := plumbing.ReferenceName(filepath.ToSlash(rel)); checkRefName(name) == nil {
			seen[name] = struct{}{} // lock files fail the check
		}
		return nil
	})
	if err != nil || !withPacked {
		return sortedNames(seen), err
	}
	err = r.forEachPacked(func(name plumbing.ReferenceName, _ plumbing.Hash) bool {
		if strings.HasPrefix(string(name), prefix) {
			seen[name] = struct{}{}
		}
		return true
	})
	return sortedNames(seen), err
}

func sortedNames(set map[plumbing.ReferenceName]struct{}) []plumbing.ReferenceName {
	names := make([]plumbing.ReferenceName, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
