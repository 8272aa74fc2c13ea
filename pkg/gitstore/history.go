package gitstore

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// fileState is one value file in a tree: where a key's value is.
type fileState struct {
	ext  string
	blob plumbing.Hash // zero: the key has no file (deleted)
}

// rebuild derives the index from the branch: it walks the first-parent
// chain from the root and applies every commit as applyCommit would when
// picking it up live, so revisions come out the same.
func (b *Branch) rebuild() error {
	head, err := b.git.Ref(b.ref)
	if err != nil {
		return err
	}
	return b.rebuildFrom(head)
}

// rebuildFrom derives the index from the history of commit head (an empty
// index for the zero hash) into a branch whose index is empty.
func (b *Branch) rebuildFrom(head plumbing.Hash) error {
	if head.IsZero() {
		return b.resetMirror()
	}
	var commits []*object.Commit
	for h := head; !h.IsZero(); {
		c, err := object.GetCommit(b.git.Storer(), h)
		if err != nil {
			return fmt.Errorf("read commit %s: %w", h, err)
		}
		commits = append(commits, c)
		if h, err = b.historyParent(c); err != nil {
			return err
		}
	}
	for i := len(commits) - 1; i >= 0; i-- {
		if err := b.applyCommit(commits[i], false); err != nil {
			return err
		}
	}
	// Current values live in memory; history stays in git until asked for.
	var loadErr error
	b.x.keys.Ascend(func(h *keyHistory) bool {
		if r := h.latest(); r != nil && !r.tombstone() && !r.loaded {
			if r.value, loadErr = readValue(b.git, r.blob, r.ext); loadErr != nil {
				return false
			}
			r.loaded = true
		}
		return true
	})
	if loadErr != nil {
		return loadErr
	}
	b.log.V(2).Info("Rebuilt index from branch", "commits", len(commits), "revision", b.committed, "head", head)
	return b.resetMirror()
}

// resetIndex empties the index before a rebuild from another head.
// Writer-only, before the writer runs.
func (b *Branch) resetIndex() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.x = newIndex()
	b.chain = map[plumbing.Hash]int64{}
	b.problems = problemSet{}
	b.head, b.tree = plumbing.ZeroHash, plumbing.ZeroHash
	b.committed, b.latest = 1, 1
}

func firstParent(c *object.Commit) plumbing.Hash {
	if len(c.ParentHashes) == 0 {
		return plumbing.ZeroHash
	}
	return c.ParentHashes[0]
}

// historyParent is the parent through which commit c continues the
// branch's own history: the chain of commits that rebuild and pick-up walk
// to give revisions. It is the first parent, as in git, except for a merge
// someone else made whose first parent is not one of the store's commits
// while another parent is: a person's `git pull` before a push makes such
// a merge, with their own commits first and the store's head second.
// Walking their side would leave the store's commits since the person's
// last pull off the chain, and revisions would go backwards on the next
// rebuild.
func (b *Branch) historyParent(c *object.Commit) (plumbing.Hash, error) {
	first := firstParent(c)
	if len(c.ParentHashes) < 2 || isStoreCommit(c) {
		return first, nil
	}
	for i, p := range c.ParentHashes {
		ours, err := b.isStoreCommitHash(p)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if ours {
			return c.ParentHashes[i], nil
		}
	}
	return first, nil
}

// isStoreCommit says whether the store made c: its message names its
// revisions (parseCommitOps), or it is our answer to a branch moved from
// outside.
func isStoreCommit(c *object.Commit) bool {
	if _, _, ok := parseCommitOps(c.Message); ok {
		return true
	}
	_, ok := parseOutsideRevision(c.Message)
	return ok
}

func (b *Branch) isStoreCommitHash(h plumbing.Hash) (bool, error) {
	b.mu.RLock()
	_, known := b.chain[h]
	b.mu.RUnlock()
	if known {
		return true, nil
	}
	c, err := object.GetCommit(b.git.Storer(), h)
	if err != nil {
		return false, fmt.Errorf("read commit %s: %w", h, err)
	}
	return isStoreCommit(c), nil
}

// applyCommit gives commit c (whose first parent is the current head)
// revisions and applies it to the index, making it visible. A commit of
// ours (parseCommitOps) keeps the revisions its message names, provided
// they are newer than the current revision and account for every file it
// changes; its files are the store's own and are read as such. Any other
// commit is one revision (the one its message names when it is our answer
// to a branch moved from outside, see reconcile), and each file it changes
// is read with Options.ReadFile now: a file that can't be served is
// recorded as a problem and its key keeps its last good value
// (problems.go). loadValues reads our own new values now (live pick-up);
// otherwise they stay in git (rebuild). Errors are I/O errors only: the
// content of a commit never fails it.
func (b *Branch) applyCommit(c *object.Commit, loadValues bool) error {
	diff, err := b.diffTrees(b.tree, c.TreeHash)
	if err != nil {
		return err
	}
	revs, ours := b.revisionsFromMessage(c, diff)
	source := c.Hash // the commit that brought the files, for problems
	if !ours {
		revs = []revisionOps{{rev: b.outsideRevision(c), stems: sortedStems(diff)}}
		if _, merged := parseOutsideRevision(c.Message); merged && len(c.ParentHashes) > 1 {
			source = c.ParentHashes[1] // our answer to a force-push: name what was pushed
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ro := range revs {
		var changes []change
		for _, stem := range ro.stems {
			var ch *change
			if ours {
				ch, err = b.commitChange(stem, ro.rev, diff[stem], loadValues)
			} else {
				ch, err = b.outsideChange(source, stem, ro.rev, diff[stem])
			}
			if err != nil {
				return err
			}
			if ch != nil {
				changes = append(changes, *ch)
			}
		}
		if len(changes) == 0 && !ours {
			continue // no value file changed (a README), or none could be served: no revision
		}
		b.x.apply(ro.rev, changes)
		b.latest = ro.rev
	}
	b.head, b.tree = c.Hash, c.TreeHash
	b.chain[c.Hash] = b.latest
	b.advance(b.latest)
	return nil
}

// outsideRevision is the revision of a commit that is not one of ours: the
// one its message names if it is our answer to a branch moved from
// outside (reconcile), else the next.
func (b *Branch) outsideRevision(c *object.Commit) int64 {
	if rev, ok := parseOutsideRevision(c.Message); ok && rev > b.latest {
		return rev
	}
	return b.latest + 1
}

// commitChange is the change one of our commits makes to the key of stem
// at rev, nil for none. It also clears a problem the stem had: our file
// replaced the one that could not be served.
func (b *Branch) commitChange(stem string, rev int64, f fileState, loadValues bool) (*change, error) {
	key, err := PathKey(stem)
	if err != nil {
		return nil, nil
	}
	b.setProblem(stem, nil)
	prev := b.x.current(key)
	if f.blob.IsZero() {
		if prev == nil {
			return nil, nil
		}
		return &change{key: key, rec: &record{mod: rev}, prev: prev}, nil
	}
	rec := &record{mod: rev, create: rev, version: 1, blob: f.blob, ext: f.ext}
	if prev != nil {
		rec.create, rec.version = prev.create, prev.version+1
	}
	if loadValues {
		v, err := readValue(b.git, f.blob, f.ext)
		if err != nil {
			return nil, err
		}
		rec.value, rec.loaded = v, true
	}
	return &change{key: key, rec: rec, prev: prev}, nil
}

// outsideChange is the change a commit made by someone else makes to the
// key of stem at rev: the file is read with Options.ReadFile, and one that
// can't be served changes nothing but the branch's problems. Its value is
// kept in memory (record.outside), so that it is never read again from a
// blob with the store's own decoding.
func (b *Branch) outsideChange(commit plumbing.Hash, stem string, rev int64, f fileState) (*change, error) {
	key, err := PathKey(stem)
	problem := func(err error) (*change, error) {
		b.setProblem(stem, &FileProblem{Path: stem + f.ext, Key: key, Commit: commit, Err: err.Error()})
		return nil, nil
	}
	if err != nil {
		if f.blob.IsZero() {
			b.setProblem(stem, nil)
			return nil, nil
		}
		key = ""
		return problem(fmt.Errorf("the path maps to no key: %w", err))
	}
	prev := b.x.current(key)
	if f.blob.IsZero() {
		b.setProblem(stem, nil)
		if prev == nil {
			return nil, nil
		}
		return &change{key: key, rec: &record{mod: rev}, prev: prev}, nil
	}
	content, err := readBlob(b.git, f.blob)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return problem(err)
	}
	if err != nil {
		return nil, err
	}
	v, err := b.opts.ReadFile(key, content, f.ext)
	if err != nil {
		return problem(err)
	}
	b.setProblem(stem, nil)
	rec := &record{mod: rev, create: rev, version: 1, blob: f.blob, ext: f.ext, value: v, loaded: true, outside: true}
	if prev != nil {
		rec.create, rec.version = prev.create, prev.version+1
	}
	return &change{key: key, rec: rec, prev: prev}, nil
}

type revisionOps struct {
	rev   int64
	stems []string
}

// revisionsFromMessage reads the revisions of one of our commits. It also
// fills diff with the current state of keys the message names that the tree
// diff did not show (a put of identical bytes still bumps the version).
func (b *Branch) revisionsFromMessage(c *object.Commit, diff map[string]fileState) ([]revisionOps, bool) {
	ops, _, ok := parseCommitOps(c.Message)
	if !ok || ops[0].rev <= b.latest {
		return nil, false
	}
	named := map[string]bool{}
	var out []revisionOps
	for _, op := range ops {
		if named[op.stem] {
			return nil, false // one op per key per commit
		}
		named[op.stem] = true
		f, changed := diff[op.stem]
		switch {
		case op.kind == opDelete && (changed && !f.blob.IsZero()):
			return nil, false
		case op.kind != opDelete && !changed:
			key, err := PathKey(op.stem)
			cur := b.x.current(key)
			if err != nil || cur == nil || cur.ext == "" {
				return nil, false
			}
			diff[op.stem] = fileState{ext: cur.ext, blob: cur.blob}
		case op.kind != opDelete && f.blob.IsZero():
			return nil, false
		}
		if n := len(out); n > 0 && out[n-1].rev == op.rev {
			out[n-1].stems = append(out[n-1].stems, op.stem)
		} else {
			out = append(out, revisionOps{rev: op.rev, stems: []string{op.stem}})
		}
	}
	for stem := range diff {
		if !named[stem] {
			return nil, false
		}
	}
	return out, true
}

func sortedStems(diff map[string]fileState) []string {
	stems := make([]string, 0, len(diff))
	for s := range diff {
		stems = append(stems, s)
	}
	sort.Strings(stems)
	return stems
}

// diffTrees lists the value files that differ between two trees, by stem,
// with their state in the new tree. Subtrees with equal hashes are skipped.
func (b *Branch) diffTrees(from, to plumbing.Hash) (map[string]fileState, error) {
	b.trees.next()
	out := map[string]fileState{}
	err := b.diffInto(out, "", from, to)
	return out, err
}

// readEntries reads a tree, from the trees of the previous diff when it was
// one of them: consecutive commits share most of their trees, so a rebuild
// reads each about once.
func (b *Branch) readEntries(h plumbing.Hash) ([]object.TreeEntry, error) {
	if h.IsZero() {
		return nil, nil
	}
	if e, ok := b.trees.cur[h]; ok {
		return e, nil
	}
	e, ok := b.trees.prev[h]
	if !ok {
		var err error
		if e, err = readTree(b.git.Storer(), h); err != nil {
			return nil, err
		}
	}
	b.trees.cur[h] = e
	return e, nil
}

// treeCache holds the trees read by the current and the previous diff.
type treeCache struct {
	prev, cur map[plumbing.Hash][]object.TreeEntry
}

func (c *treeCache) next() {
	c.prev, c.cur = c.cur, map[plumbing.Hash][]object.TreeEntry{}
}

// diffInto walks two trees' entries side by side (both are in git order).
func (b *Branch) diffInto(out map[string]fileState, dir string, from, to plumbing.Hash) error {
	if from == to {
		return nil
	}
	a, err := b.readEntries(from)
	if err != nil {
		return err
	}
	z, err := b.readEntries(to)
	if err != nil {
		return err
	}
	for i, j := 0, 0; i < len(a) || j < len(z); {
		var ea, ez *object.TreeEntry
		switch {
		case j == len(z) || (i < len(a) && gitName(a[i]) < gitName(z[j])):
			ea, i = &a[i], i+1
		case i == len(a) || gitName(z[j]) < gitName(a[i]):
			ez, j = &z[j], j+1
		default:
			ea, ez, i, j = &a[i], &z[j], i+1, j+1
		}
		if err := b.diffEntry(out, dir, ea, ez); err != nil {
			return err
		}
	}
	return nil
}

// diffEntry compares one name's entries (nil where absent).
func (b *Branch) diffEntry(out map[string]fileState, dir string, ea, ez *object.TreeEntry) error {
	if ea != nil && ez != nil && ea.Hash == ez.Hash && ea.Mode == ez.Mode {
		return nil
	}
	var subA, subZ plumbing.Hash
	if ea != nil && ea.Mode == filemode.Dir {
		subA = ea.Hash
	}
	if ez != nil && ez.Mode == filemode.Dir {
		subZ = ez.Hash
	}
	if !subA.IsZero() || !subZ.IsZero() {
		name := ez
		if name == nil {
			name = ea
		}
		if err := b.diffInto(out, dir+name.Name+"/", subA, subZ); err != nil {
			return err
		}
	}
	if ez != nil && ez.Mode.IsFile() {
		if stem, ext, ok := splitExt(ez.Name); ok {
			stem = dir + stem
			// A key with files of several extensions: the first in
			// valueExts order wins.
			if cur, seen := out[stem]; !seen || cur.blob.IsZero() || extRank(ext) < extRank(cur.ext) {
				out[stem] = fileState{ext: ext, blob: ez.Hash}
			}
		}
	}
	if ea != nil && ea.Mode.IsFile() && (ez == nil || !ez.Mode.IsFile()) {
		if stem, ext, ok := splitExt(ea.Name); ok {
			if _, seen := out[dir+stem]; !seen {
				out[dir+stem] = fileState{ext: ext}
			}
		}
	}
	return nil
}

func extRank(ext string) int {
	for i, e := range valueExts {
		if e == ext {
			return i
		}
	}
	return len(valueExts)
}
