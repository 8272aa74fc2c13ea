package gitstore

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Files that others commit to a branch (a git push, git update-ref, a
// force-push answered by a merge) are read with Options.ReadFile, which may
// refuse them: truncated JSON, a file at a path that is no key, an object
// that does not belong at its path. Such a file never stops the branch:
// the key keeps its last good value (or stays absent), writes and watches
// go on, and the file is listed as a problem until a later commit fixes or
// removes it, or a write through the store replaces it.
//
// Keeping the last good value rather than treating the key as deleted is
// deliberate: a deletion would travel on, to watchers, to controllers and
// to the clusters a syncer drives, and one person's typo would delete a
// Deployment on a physical cluster. A kept value loses nothing and is
// corrected by the next good commit.

// FileProblem is one value file of a branch's head tree that the store does
// not serve.
type FileProblem struct {
	// Path is the file's path in the tree.
	Path string
	// Key is the key the path maps to ("" when the path is not a key).
	Key string
	// Commit is the commit that brought the file.
	Commit plumbing.Hash
	// Err says why the file is not served.
	Err string
}

func (p FileProblem) String() string {
	return fmt.Sprintf("%s (commit %s): %s", p.Path, shortHash(p.Commit), p.Err)
}

func shortHash(h plumbing.Hash) string { return h.String()[:12] }

// FileErrors lists value files that could not be read (Repository.Values).
type FileErrors struct {
	Problems []FileProblem
}

func (e *FileErrors) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "gitstore: files that cannot be served: " + strings.Join(parts, "; ")
}

// IsFileErrors says whether err lists unreadable files, and returns them.
func IsFileErrors(err error) (*FileErrors, bool) {
	var fe *FileErrors
	ok := errors.As(err, &fe)
	return fe, ok
}

// problemSet is a branch's current problems by file stem. Writer-only,
// except that Problems copies it under Branch.mu.
type problemSet map[string]FileProblem

// set records or clears the problem of stem; it returns whether the set
// changed.
func (s problemSet) set(stem string, p *FileProblem) bool {
	old, had := s[stem]
	switch {
	case p == nil && !had:
		return false
	case p == nil:
		delete(s, stem)
		return true
	case had && old.Path == p.Path && old.Err == p.Err:
		return false
	}
	s[stem] = *p
	return true
}

func (s problemSet) sorted() []FileProblem {
	out := make([]FileProblem, 0, len(s))
	for _, p := range s {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Problems lists the value files of the branch head that are not served,
// by path.
func (b *Branch) Problems() []FileProblem {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.problems.sorted()
}

// setProblem records (p != nil) or clears the problem of a file stem and
// logs the change: one line when a file goes bad, one when it is good
// again, never one per poll. Caller holds b.mu; writer-only.
func (b *Branch) setProblem(stem string, p *FileProblem) {
	if !b.problems.set(stem, p) {
		return
	}
	b.problemsChanged = true
	if p != nil {
		b.log.Info("File from outside not served; the key keeps its last good value",
			"path", p.Path, "commit", p.Commit, "err", p.Err)
	} else {
		b.log.Info("File served again", "stem", stem)
	}
}

// notifyProblems tells Options.OnProblems about a changed problem list.
// Writer-only; called without b.mu.
func (b *Branch) notifyProblems() {
	if !b.problemsChanged {
		return
	}
	b.problemsChanged = false
	if b.opts.OnProblems != nil {
		b.opts.OnProblems(b.name, b.Problems())
	}
}
