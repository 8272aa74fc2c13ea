package gitstore

import (
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// treeMirror is an in-memory copy of the branch head's tree that the writer
// patches per commit, re-encoding only the directories on changed paths.
// Subtrees are read from git on first touch. Derived state: rebuilt from the
// head commit whenever the branch moves under us.
type treeMirror struct {
	objects storer.EncodedObjectStorer
	root    *treeNode
}

type treeNode struct {
	entries  []object.TreeEntry   // in git order
	children map[string]*treeNode // loaded subdirectories by name
	hash     plumbing.Hash        // valid when !dirty
	dirty    bool
}

// treeAdder stores an encoded tree, a new version of prev (a gitrepo
// batch, which may store it as a delta against an earlier version).
type treeAdder interface {
	AddTreeVersion(t *object.Tree, prev plumbing.Hash) (plumbing.Hash, error)
}

func newTreeMirror(objects storer.EncodedObjectStorer, root plumbing.Hash) (*treeMirror, error) {
	m := &treeMirror{objects: objects}
	n, err := m.load(root)
	if err != nil {
		return nil, err
	}
	m.root = n
	return m, nil
}

func (m *treeMirror) load(h plumbing.Hash) (*treeNode, error) {
	if h.IsZero() {
		return &treeNode{dirty: true}, nil
	}
	entries, err := readTree(m.objects, h)
	if err != nil {
		return nil, err
	}
	return &treeNode{entries: entries, hash: h}, nil
}

// gitLess orders entries as git does: directories compare as "name/".
func gitName(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func (n *treeNode) find(sortName string) (int, bool) {
	i := sort.Search(len(n.entries), func(i int) bool { return gitName(n.entries[i]) >= sortName })
	return i, i < len(n.entries) && gitName(n.entries[i]) == sortName
}

func (m *treeMirror) child(n *treeNode, name string, create bool) (*treeNode, error) {
	if c, ok := n.children[name]; ok {
		return c, nil
	}
	i, found := n.find(name + "/")
	var c *treeNode
	switch {
	case found:
		var err error
		if c, err = m.load(n.entries[i].Hash); err != nil {
			return nil, err
		}
	case create:
		// A file of that very name (pushed from outside: a key's path
		// needs a directory there) gives way; a tree can't hold both.
		if j, file := n.find(name); file {
			n.entries = append(n.entries[:j], n.entries[j+1:]...)
			i, _ = n.find(name + "/")
		}
		c = &treeNode{dirty: true}
		n.entries = append(n.entries, object.TreeEntry{})
		copy(n.entries[i+1:], n.entries[i:])
		n.entries[i] = object.TreeEntry{Name: name, Mode: filemode.Dir}
	default:
		return nil, nil
	}
	if n.children == nil {
		n.children = map[string]*treeNode{}
	}
	n.children[name] = c
	return c, nil
}

// set points path at blob (creating directories); a zero blob removes the
// file (and directories that become empty).
func (m *treeMirror) set(path string, blob plumbing.Hash) error {
	_, err := m.setIn(m.root, strings.Split(path, "/"), blob)
	return err
}

// setIn returns whether n became empty.
func (m *treeMirror) setIn(n *treeNode, parts []string, blob plumbing.Hash) (bool, error) {
	if len(parts) == 1 {
		i, found := n.find(parts[0])
		switch {
		case blob.IsZero() && found:
			n.entries = append(n.entries[:i], n.entries[i+1:]...)
		case blob.IsZero():
			return len(n.entries) == 0, nil
		case found:
			n.entries[i].Hash, n.entries[i].Mode = blob, filemode.Regular
		default:
			n.entries = append(n.entries, object.TreeEntry{})
			copy(n.entries[i+1:], n.entries[i:])
			n.entries[i] = object.TreeEntry{Name: parts[0], Mode: filemode.Regular, Hash: blob}
		}
		n.dirty = true
		return len(n.entries) == 0, nil
	}
	c, err := m.child(n, parts[0], !blob.IsZero())
	if err != nil || c == nil {
		return false, err
	}
	empty, err := m.setIn(c, parts[1:], blob)
	if err != nil {
		return false, err
	}
	n.dirty = true
	if empty {
		delete(n.children, parts[0])
		if i, found := n.find(parts[0] + "/"); found {
			n.entries = append(n.entries[:i], n.entries[i+1:]...)
		}
	}
	return len(n.entries) == 0, nil
}

// flush encodes every dirty directory into the batch and returns the root
// tree's hash.
func (m *treeMirror) flush(b treeAdder) (plumbing.Hash, error) {
	return m.flushNode(m.root, b)
}

func (m *treeMirror) flushNode(n *treeNode, b treeAdder) (plumbing.Hash, error) {
	if !n.dirty {
		return n.hash, nil
	}
	for name, c := range n.children {
		if !c.dirty {
			continue
		}
		h, err := m.flushNode(c, b)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if i, found := n.find(name + "/"); found {
			n.entries[i].Hash = h
		}
	}
	h, err := b.AddTreeVersion(&object.Tree{Entries: n.entries}, n.hash)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	n.hash, n.dirty = h, false
	return h, nil
}
