package gitstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/heaven-dev/heaven/pkg/merge"
)

// The merge commit of two branches' objects: which keys to merge, the
// three-way merge of their values (pkg/merge), one merge commit with the
// result. Heavens' AutomatedMerges and remotes both merge this way.

// CommitReader reads any commit of the repository (*Repository).
type CommitReader interface {
	MergeBase(a, b plumbing.Hash) (plumbing.Hash, error)
	MergeBases(a, b plumbing.Hash) ([]plumbing.Hash, error)
	ChangedKeys(from, to plumbing.Hash) ([]string, error)
	Values(commit plumbing.Hash, keys []string) (map[string][]byte, error)
}

// MergeTarget is a branch that takes merge commits (*Branch).
type MergeTarget interface {
	Name() string
	Head() plumbing.Hash
	Merge(ctx context.Context, req MergeRequest) (MergeResult, error)
}

var (
	_ CommitReader = (*Repository)(nil)
	_ MergeTarget  = (*Branch)(nil)
)

// ErrNoTargetHead: the target's branch has no commits to merge into.
var ErrNoTargetHead = errors.New("the target branch has no commits")

// MergeCommitOptions say how MergeCommit merges.
type MergeCommitOptions struct {
	// Merger merges objects (its Policy resolves conflicts).
	Merger merge.Merger
	// Include says whether keys of a resource ("<group or core>/<resource>")
	// merge; nil for all.
	Include func(resource string) bool
	// Message is the merge commit's subject.
	Message string
	// Author is who the merge is made for (MergeRequest.Author).
	Author string
	// Attempts bounds how often the merge is computed again when the
	// target's head moved meanwhile (default 3); then ErrHeadMoved.
	Attempts int
}

// MergeOutcome is what MergeCommit did.
type MergeOutcome struct {
	// UpToDate: the source commit was already in the target's history.
	UpToDate bool
	// TargetHead is the target's head the merge was computed against.
	TargetHead plumbing.Hash
	// Base is their merge base (zero for unrelated histories).
	Base plumbing.Hash
	// Written is the merge commit and its revision; a zero Commit when
	// nothing was written (up to date, nothing to change, or blocked).
	Written MergeResult
	// Changes is how many objects the merge changed in the target.
	Changes int
	// Conflicts found, however resolved.
	Conflicts []merge.Conflict
	// Blocked: a Manual conflict kept the merge from being written.
	Blocked bool
}

// MergeCommit merges commit source into target's branch with a three-way
// merge of objects from their merge base, and writes the result as one
// merge commit whose second parent is source. It takes a commit, not a
// heaven: the source may be another heaven's head or a fetched remote
// branch.
//
// Nothing is written when source is already in the target's history (the
// check that keeps two AutomatedMerges in opposite directions from
// merging back and forth forever), when the merge changes no object (a
// merge commit with nothing in it would only send the other direction
// round again), or when a conflict resolves Manual. Only keys the source
// changed since the base can change, so only those are read.
//
// When the target takes a write while the merge is computed, the merge is
// computed again on the new head (never written over it), up to Attempts
// times, then ErrHeadMoved is returned.
func MergeCommit(ctx context.Context, commits CommitReader, target MergeTarget, source plumbing.Hash, opts MergeCommitOptions) (MergeOutcome, error) {
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	var err error
	for range attempts {
		var out MergeOutcome
		out, err = mergeOnce(ctx, commits, target, source, opts)
		if !errors.Is(err, ErrHeadMoved) {
			return out, err
		}
	}
	return MergeOutcome{}, err
}

func mergeOnce(ctx context.Context, commits CommitReader, target MergeTarget, source plumbing.Hash, opts MergeCommitOptions) (MergeOutcome, error) {
	head := target.Head()
	out := MergeOutcome{TargetHead: head}
	if head.IsZero() {
		return out, ErrNoTargetHead
	}
	bases, err := commits.MergeBases(head, source)
	if err != nil {
		return out, err
	}
	if len(bases) > 0 {
		out.Base = bases[0]
	}
	if out.Base == source {
		// The source is in the target's history already.
		out.UpToDate = true
		return out, nil
	}
	keys, err := changedKeys(commits, bases, source, opts.Include)
	if err != nil || len(keys) == 0 {
		return out, err
	}
	merger := opts.Merger
	if merger.Lists, err = schemaListRules(commits, head, source, keys, merger.Lists); err != nil {
		return out, err
	}
	sides := make([]map[string][]byte, 3)
	if sides[0], err = baseValues(commits, bases, keys, merger); err != nil {
		return out, err
	}
	for i, c := range []plumbing.Hash{head, source} {
		if sides[i+1], err = commits.Values(c, keys); err != nil {
			return out, err
		}
	}
	res := merger.MergeTree(sides[0], sides[1], sides[2])
	out.Conflicts = res.Conflicts
	if !res.Resolved {
		out.Blocked = true
		return out, nil
	}
	req := MergeRequest{ExpectedHead: head, SecondParent: source, Puts: map[string][]byte{}, Message: opts.Message, Author: opts.Author}
	for _, ch := range res.Changes {
		if ch.Deleted {
			req.Deletes = append(req.Deletes, ch.Key)
		} else {
			req.Puts[ch.Key] = ch.Value
		}
	}
	out.Changes = len(res.Changes)
	if out.Changes == 0 {
		return out, nil
	}
	if out.Written, err = target.Merge(ctx, req); err != nil {
		return out, fmt.Errorf("merging into %s: %w", target.Name(), err)
	}
	return out, nil
}

// changedKeys are the keys source changed since any of bases (all of
// them without a base) that merge.
func changedKeys(commits CommitReader, bases []plumbing.Hash, source plumbing.Hash, include func(string) bool) ([]string, error) {
	if len(bases) == 0 {
		bases = []plumbing.Hash{plumbing.ZeroHash}
	}
	seen := map[string]bool{}
	var kept []string
	for _, base := range bases {
		keys, err := commits.ChangedKeys(base, source)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if !seen[k] && (include == nil || include(ResourceOf(k))) {
				seen[k] = true
				kept = append(kept, k)
			}
		}
	}
	slices.Sort(kept)
	return kept, nil
}

// baseValues are the values of keys at the merge base: at the one base,
// or, after criss-cross merges, at a virtual base that merges the bases as
// git's recursive strategies do (each further base merged into the first
// from their own merge base, a conflict taking the first's value). With a
// single one of the bases, an object one base has and the chosen one
// lacks would look added on both sides, and its fields conflict where only
// one side changed them.
func baseValues(commits CommitReader, bases []plumbing.Hash, keys []string, m merge.Merger) (map[string][]byte, error) {
	if len(bases) == 0 {
		return map[string][]byte{}, nil
	}
	values, err := commits.Values(bases[0], keys)
	if err != nil {
		return nil, err
	}
	virtual := merge.Merger{Policy: merge.Policy{Default: merge.PreferTarget}, Lists: m.Lists}
	for _, b := range bases[1:] {
		inner, err := commits.MergeBase(bases[0], b)
		if err != nil {
			return nil, err
		}
		innerValues := map[string][]byte{}
		if !inner.IsZero() {
			if innerValues, err = commits.Values(inner, keys); err != nil {
				return nil, err
			}
		}
		other, err := commits.Values(b, keys)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			v := virtual.Merge(k, innerValues[k], values[k], other[k]).Value
			if v == nil {
				delete(values, k)
			} else {
				values[k] = v
			}
		}
	}
	return values, nil
}

// ResourceOf is the "<group or core>/<resource>" of a store key
// ("/apps/deployments/default/web" → "apps/deployments"), "" if it has none.
func ResourceOf(key string) string {
	parts := strings.SplitN(strings.TrimPrefix(key, "/"), "/", 3)
	if len(parts) < 3 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}

// crdPrefix is where a heaven stores CustomResourceDefinitions.
const crdPrefix = "/apiextensions.k8s.io/customresourcedefinitions/"

// schemaListRules adds to rules the list rules of the custom resources among
// keys, from their CustomResourceDefinitions as the target (else the
// source) has them: the merged objects are stored by the target's. Rules
// given by the caller come first; those of a schema apply to its resource
// only.
func schemaListRules(commits CommitReader, head, source plumbing.Hash, keys []string, rules []merge.ListRule) ([]merge.ListRule, error) {
	seen := map[string]bool{}
	var crds []string
	for _, k := range keys {
		r := ResourceOf(k)
		group, plural, _ := strings.Cut(r, "/")
		if r == "" || group == "core" || seen[r] {
			continue
		}
		seen[r] = true
		crds = append(crds, crdPrefix+plural+"."+group)
	}
	if len(crds) == 0 {
		return rules, nil
	}
	found := map[string][]byte{}
	for _, c := range []plumbing.Hash{source, head} { // the target's win
		values, err := commits.Values(c, crds)
		if err != nil {
			return nil, err
		}
		for k, v := range values {
			found[k] = v
		}
	}
	out := slices.Clone(rules)
	for _, k := range crds {
		v, ok := found[k]
		if !ok {
			continue
		}
		more, err := merge.CRDListRules(v)
		if err != nil {
			continue // a CRD that can't be read merges by the heuristic
		}
		out = append(out, more...)
	}
	return out, nil
}
