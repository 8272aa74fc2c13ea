package gitstore

import (
	"container/heap"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MergeBase returns the best common ancestor of commits a and b, as
// `git merge-base a b` does, or the zero hash when their histories do not
// meet. Where there are several (criss-cross merges), it returns the most
// recent one.
//
// It walks down from both commits, newest first, only until the walk is
// below their common ancestors (git's paint_down_to_common), so its cost
// is the history since the last merge, not the whole history.
func (r *Repository) MergeBase(a, b plumbing.Hash) (plumbing.Hash, error) {
	bases, err := r.mergeBases(a, b)
	if err != nil || len(bases) == 0 {
		return plumbing.ZeroHash, err
	}
	return bases[0], nil
}

// MergeBases returns every best common ancestor of commits a and b (`git
// merge-base --all a b`), the most recent first; none when their histories
// do not meet. There are several after criss-cross merges: heavens that
// merge into each other both ways.
func (r *Repository) MergeBases(a, b plumbing.Hash) ([]plumbing.Hash, error) {
	return r.mergeBases(a, b)
}

// IsAncestor says whether commit a is b or one of b's ancestors
// (`git merge-base --is-ancestor a b`).
func (r *Repository) IsAncestor(a, b plumbing.Hash) (bool, error) {
	if a == b {
		return true, nil
	}
	w := newAncestryWalk(r)
	cands, err := w.paint(a, b)
	if err != nil {
		return false, err
	}
	for _, c := range cands {
		if c == a {
			return true, nil
		}
	}
	return false, nil
}

func (r *Repository) mergeBases(a, b plumbing.Hash) ([]plumbing.Hash, error) {
	if a == b {
		return []plumbing.Hash{a}, nil
	}
	w := newAncestryWalk(r)
	cands, err := w.paint(a, b)
	if err != nil || len(cands) < 2 {
		return cands, err
	}
	// Drop candidates that are ancestors of other candidates.
	var best []plumbing.Hash
	for i, c := range cands {
		redundant := false
		for j, d := range cands {
			if i == j {
				continue
			}
			if ok, err := newAncestryWalk(r).reaches(d, c); err != nil {
				return nil, err
			} else if ok {
				redundant = true
				break
			}
		}
		if !redundant {
			best = append(best, c)
		}
	}
	return best, nil
}

// Flags of a commit in an ancestry walk.
const (
	fromA  uint8 = 1 << iota // reachable from a
	fromB                    // reachable from b
	stale                    // below a common ancestor already found
	result                   // a common ancestor found
)

// ancestryWalk is one walk through commits, newest first.
type ancestryWalk struct {
	r       *Repository
	commits map[plumbing.Hash]*walkCommit
	queue   walkQueue
	seq     int
}

type walkCommit struct {
	hash    plumbing.Hash
	when    int64
	parents []plumbing.Hash
	flags   uint8
}

func newAncestryWalk(r *Repository) *ancestryWalk {
	return &ancestryWalk{r: r, commits: map[plumbing.Hash]*walkCommit{}}
}

func (w *ancestryWalk) commit(h plumbing.Hash) (*walkCommit, error) {
	if c, ok := w.commits[h]; ok {
		return c, nil
	}
	hdr, err := w.r.commitHeader(h)
	if err != nil {
		return nil, err
	}
	c := &walkCommit{hash: h, when: hdr.when, parents: hdr.parents}
	w.commits[h] = c
	return c, nil
}

// commitHeader is what ancestry walks read of a commit.
type commitHeader struct {
	when    int64
	parents []plumbing.Hash
}

// commitHeader reads commit h's time and parents, from r.headers when a
// walk read them before: merges walk the same recent history each time.
func (r *Repository) commitHeader(h plumbing.Hash) (commitHeader, error) {
	if hdr, ok := r.headers.Get(h); ok {
		return hdr.(commitHeader), nil
	}
	gc, err := object.GetCommit(r.git.Storer(), h)
	if err != nil {
		return commitHeader{}, fmt.Errorf("read commit %s: %w", h, err)
	}
	hdr := commitHeader{when: gc.Committer.When.Unix(), parents: gc.ParentHashes}
	r.headers.Add(h, hdr)
	return hdr, nil
}

func (w *ancestryWalk) push(c *walkCommit) {
	w.seq++
	heap.Push(&w.queue, walkEntry{c: c, seq: w.seq})
}

// paint walks down from a and b and returns their common ancestors that
// are not below another one found (newest first); redundant ones may
// remain where commit times mislead the walk.
func (w *ancestryWalk) paint(a, b plumbing.Hash) ([]plumbing.Hash, error) {
	ca, err := w.commit(a)
	if err != nil {
		return nil, err
	}
	cb, err := w.commit(b)
	if err != nil {
		return nil, err
	}
	ca.flags |= fromA
	cb.flags |= fromB
	w.push(ca)
	w.push(cb)
	var found []*walkCommit
	for w.queue.hasNonStale() {
		c := heap.Pop(&w.queue).(walkEntry).c
		flags := c.flags & (fromA | fromB | stale)
		if flags == fromA|fromB {
			if c.flags&result == 0 {
				c.flags |= result
				found = append(found, c)
			}
			flags |= stale
		}
		for _, p := range c.parents {
			pc, err := w.commit(p)
			if err != nil {
				return nil, err
			}
			if pc.flags&flags == flags {
				continue
			}
			pc.flags |= flags
			w.push(pc)
		}
	}
	var out []plumbing.Hash
	for _, c := range found {
		if c.flags&stale == 0 {
			out = append(out, c.hash)
		}
	}
	return out, nil
}

// reaches says whether commit to is reachable from commit from.
func (w *ancestryWalk) reaches(from, to plumbing.Hash) (bool, error) {
	seen := map[plumbing.Hash]bool{from: true}
	stack := []plumbing.Hash{from}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h == to {
			return true, nil
		}
		c, err := w.commit(h)
		if err != nil {
			return false, err
		}
		for _, p := range c.parents {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false, nil
}

// walkQueue is a priority queue of commits: newest commit time first, then
// in the order pushed.
type walkQueue []walkEntry

type walkEntry struct {
	c   *walkCommit
	seq int
}

func (q walkQueue) Len() int { return len(q) }
func (q walkQueue) Less(i, j int) bool {
	if q[i].c.when != q[j].c.when {
		return q[i].c.when > q[j].c.when
	}
	return q[i].seq < q[j].seq
}
func (q walkQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *walkQueue) Push(x any)   { *q = append(*q, x.(walkEntry)) }
func (q *walkQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// hasNonStale says whether the walk still has commits not below a common
// ancestor.
func (q walkQueue) hasNonStale() bool {
	for _, e := range q {
		if e.c.flags&stale == 0 {
			return true
		}
	}
	return false
}
