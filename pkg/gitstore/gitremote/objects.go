package gitremote

import (
	"container/heap"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// newObjects lists the objects a remote whose branch is at old lacks to
// take head (`git rev-list --objects head ^old`, roughly): the commits
// reachable from head and not from old, and of each one's tree what its
// parents' trees do not hold. The remote has everything reachable from
// old, so the cost is the new commits, not the history.
//
// A commit whose timestamp lies (older than its ancestors) may be counted
// as new although the remote has it; its objects are then sent again,
// which git accepts. Nothing the remote lacks is ever left out.
func newObjects(s storer.EncodedObjectStorer, head, old plumbing.Hash) ([]plumbing.Hash, error) {
	commits, err := newCommits(s, head, old)
	if err != nil {
		return nil, err
	}
	w := &treeWalk{s: s, out: map[plumbing.Hash]bool{}, trees: map[plumbing.Hash]*object.Tree{}}
	for _, c := range commits {
		w.add(c.Hash)
		var parents []plumbing.Hash
		for _, p := range c.ParentHashes {
			pc, err := object.GetCommit(s, p)
			if err != nil {
				return nil, fmt.Errorf("read commit %s: %w", p, err)
			}
			parents = append(parents, pc.TreeHash)
		}
		if err := w.walk(c.TreeHash, parents); err != nil {
			return nil, err
		}
	}
	return w.list, nil
}

// Flags of a commit in the walk.
const (
	interesting   uint8 = 1 << iota // reachable from head
	uninteresting                   // reachable from old
)

type walkNode struct {
	c     *object.Commit
	flags uint8
}

// newCommits walks down from head and old, newest first, until every
// commit still to visit is reachable from old, and returns those only
// head reaches.
func newCommits(s storer.EncodedObjectStorer, head, old plumbing.Hash) ([]*object.Commit, error) {
	nodes := map[plumbing.Hash]*walkNode{}
	var q nodeQueue
	visit := func(h plumbing.Hash, flag uint8) error {
		if n, ok := nodes[h]; ok {
			if n.flags&flag == 0 {
				n.flags |= flag
				heap.Push(&q, n) // again: its parents must learn the flag
			}
			return nil
		}
		c, err := object.GetCommit(s, h)
		if err != nil {
			return fmt.Errorf("read commit %s: %w", h, err)
		}
		n := &walkNode{c: c, flags: flag}
		nodes[h] = n
		heap.Push(&q, n)
		return nil
	}
	if err := visit(head, interesting); err != nil {
		return nil, err
	}
	if !old.IsZero() {
		if err := visit(old, uninteresting); err != nil {
			return nil, err
		}
	}
	var fresh []*object.Commit
	seen := map[plumbing.Hash]bool{}
	for q.anyInteresting() {
		n := heap.Pop(&q).(*walkNode)
		flag := interesting
		if n.flags&uninteresting != 0 {
			flag = uninteresting
		} else if !seen[n.c.Hash] {
			seen[n.c.Hash] = true
			fresh = append(fresh, n.c)
		}
		for _, p := range n.c.ParentHashes {
			if err := visit(p, flag); err != nil {
				return nil, err
			}
		}
	}
	return fresh, nil
}

// nodeQueue is a priority queue of commits, newest committer time first.
type nodeQueue []*walkNode

func (q nodeQueue) Len() int { return len(q) }
func (q nodeQueue) Less(i, j int) bool {
	return q[i].c.Committer.When.After(q[j].c.Committer.When)
}
func (q nodeQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *nodeQueue) Push(x any)   { *q = append(*q, x.(*walkNode)) }
func (q *nodeQueue) Pop() any {
	old := *q
	n := old[len(old)-1]
	*q = old[:len(old)-1]
	return n
}

// anyInteresting says whether a commit not known to be reachable from old
// is still to visit.
func (q nodeQueue) anyInteresting() bool {
	for _, n := range q {
		if n.flags&uninteresting == 0 {
			return true
		}
	}
	return false
}

// treeWalk collects the objects of trees that their parents' trees (the
// same directory in the parent commits) do not hold.
type treeWalk struct {
	s     storer.EncodedObjectStorer
	out   map[plumbing.Hash]bool
	list  []plumbing.Hash
	trees map[plumbing.Hash]*object.Tree
}

func (w *treeWalk) add(h plumbing.Hash) bool {
	if w.out[h] {
		return false
	}
	w.out[h] = true
	w.list = append(w.list, h)
	return true
}

func (w *treeWalk) tree(h plumbing.Hash) (*object.Tree, error) {
	if t, ok := w.trees[h]; ok {
		return t, nil
	}
	t, err := object.GetTree(w.s, h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	w.trees[h] = t
	return t, nil
}

// walk adds tree h and what it holds that is in none of parents (the
// trees of the same directory on the parent side).
func (w *treeWalk) walk(h plumbing.Hash, parents []plumbing.Hash) error {
	for _, p := range parents {
		if p == h {
			return nil
		}
	}
	if !w.add(h) {
		return nil
	}
	t, err := w.tree(h)
	if err != nil {
		return err
	}
	var pts []*object.Tree
	for _, p := range parents {
		pt, err := w.tree(p)
		if err != nil {
			return err
		}
		pts = append(pts, pt)
	}
	for _, e := range t.Entries {
		var same []plumbing.Hash
		for _, pt := range pts {
			if pe, err := pt.FindEntry(e.Name); err == nil && (pe.Mode == filemode.Dir) == (e.Mode == filemode.Dir) {
				same = append(same, pe.Hash)
			}
		}
		switch {
		case e.Mode == filemode.Dir:
			if err := w.walk(e.Hash, same); err != nil {
				return err
			}
		case e.Mode == filemode.Submodule:
			// A commit of another repository: not ours to send.
		case !contains(same, e.Hash):
			w.add(e.Hash)
		}
	}
	return nil
}

func contains(hs []plumbing.Hash, h plumbing.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}
