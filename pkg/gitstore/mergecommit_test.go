package gitstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitstoretest"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/merge"
)

func TestMergeCommitMergesSpecAndStatusBothWays(t *testing.T) {
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, main, gitstoretest.W1, gitstoretest.Widget(2, ""))     // a user edits spec in main
	gitstoretest.Put(t, ctrl, gitstoretest.W1, gitstoretest.Widget(1, "true")) // a controller writes status in ctrl

	out := gitstoretest.MergeInto(t, repo, main, ctrl, merge.Policy{})
	require.False(t, out.Written.Commit.IsZero())
	assert.Equal(t, 1, out.Changes)
	assert.Empty(t, out.Conflicts)
	assert.Equal(t, out.Written.Commit, main.Head())
	assert.JSONEq(t, gitstoretest.Widget(2, "true"), gitstoretest.Value(t, main, gitstoretest.W1))

	out = gitstoretest.MergeInto(t, repo, ctrl, main, merge.Policy{})
	require.False(t, out.Written.Commit.IsZero())
	assert.Equal(t, gitstoretest.Value(t, main, gitstoretest.W1), gitstoretest.Value(t, ctrl, gitstoretest.W1), "both converge, byte for byte")
}

// Two merges in opposite directions stop writing once the sides agree:
// no ping-pong.
func TestMergePairStopsWhenNothingChanged(t *testing.T) {
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, main, gitstoretest.W1, gitstoretest.Widget(2, ""))
	gitstoretest.Put(t, ctrl, "/core/configmaps/default/cm", `{"data":{"a":"2"}}`+"\n")
	writes := 0
	for round := range 4 {
		for _, dir := range [][2]*gitstore.Branch{{main, ctrl}, {ctrl, main}} {
			if out := gitstoretest.MergeInto(t, repo, dir[0], dir[1], merge.Policy{Default: merge.PreferSource}); !out.Written.Commit.IsZero() {
				writes++
				require.Less(t, round, 2, "still writing in round %d", round)
			}
		}
	}
	assert.Equal(t, 2, writes, "one merge each way")
	for _, k := range []string{gitstoretest.W1, "/core/configmaps/default/cm"} {
		assert.Equal(t, gitstoretest.Value(t, main, k), gitstoretest.Value(t, ctrl, k), k)
	}
	// Each side's head is in the other's history, or their trees agree.
	out := gitstoretest.MergeInto(t, repo, ctrl, main, merge.Policy{})
	assert.True(t, out.UpToDate || out.Changes == 0)
}

func TestMergeCommitResolvesConflictsByPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   merge.Policy
		want     string // main's widget after merging ctrl into it; "" unchanged
		blocked  bool
		conflict merge.Resolution
	}{
		{"prefer source", merge.Policy{Default: merge.PreferSource}, gitstoretest.Widget(3, "true"), false, merge.PreferSource},
		{"prefer target", merge.Policy{Default: merge.PreferTarget}, gitstoretest.Widget(2, "true"), false, merge.PreferTarget},
		{"status from the source, spec from the target",
			merge.Policy{Default: merge.PreferTarget, Rules: []merge.PathRule{{Path: ".status", Resolution: merge.PreferSource}}},
			gitstoretest.Widget(2, "true"), false, merge.PreferTarget},
		{"manual", merge.Policy{Default: merge.Manual}, "", true, merge.Manual},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo, main, ctrl := gitstoretest.Pair(t)
			gitstoretest.Put(t, main, gitstoretest.W1, gitstoretest.Widget(2, ""))
			gitstoretest.Put(t, ctrl, gitstoretest.W1, gitstoretest.Widget(3, "true"))
			before, head := gitstoretest.Value(t, main, gitstoretest.W1), main.Head()

			out := gitstoretest.MergeInto(t, repo, main, ctrl, tc.policy)
			require.Len(t, out.Conflicts, 1)
			c := out.Conflicts[0]
			assert.Equal(t, gitstoretest.W1, c.Key)
			assert.Equal(t, ".spec.size", c.Path)
			assert.Equal(t, "1", string(c.Base))
			assert.Equal(t, "2", string(c.Target))
			assert.Equal(t, "3", string(c.Source))
			assert.Equal(t, tc.conflict, c.Resolution)
			assert.Equal(t, tc.blocked, out.Blocked)
			if tc.blocked {
				assert.True(t, out.Written.Commit.IsZero())
				assert.Equal(t, head, main.Head(), "a manual conflict leaves the target untouched")
				assert.Equal(t, before, gitstoretest.Value(t, main, gitstoretest.W1))
				return
			}
			assert.JSONEq(t, tc.want, gitstoretest.Value(t, main, gitstoretest.W1))
		})
	}
}

func TestMergeCommitOnlyMergesIncludedResources(t *testing.T) {
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, ctrl, gitstoretest.W1, gitstoretest.Widget(5, ""))
	gitstoretest.Put(t, ctrl, "/core/configmaps/default/cm", `{"data":{"a":"2"}}`+"\n")
	gitstoretest.Put(t, ctrl, "/core/configmaps/default/new", `{"data":{}}`+"\n")
	out, err := gitstore.MergeCommit(context.Background(), repo, main, ctrl.Head(), gitstore.MergeCommitOptions{
		Include: func(r string) bool { return r == "core/configmaps" },
	})
	require.NoError(t, err)
	assert.Equal(t, 2, out.Changes)
	assert.JSONEq(t, gitstoretest.Widget(1, ""), gitstoretest.Value(t, main, gitstoretest.W1), "widgets do not merge")
	assert.JSONEq(t, `{"data":{"a":"2"}}`, gitstoretest.Value(t, main, "/core/configmaps/default/cm"))
	assert.JSONEq(t, `{"data":{}}`, gitstoretest.Value(t, main, "/core/configmaps/default/new"))
}

// racingTarget writes to the branch right before the first merge, as a
// user would between the merge's computation and its write.
type racingTarget struct {
	*gitstore.Branch
	t      *testing.T
	raced  bool
	merges int
}

func (r *racingTarget) Merge(ctx context.Context, req gitstore.MergeRequest) (gitstore.MergeResult, error) {
	r.merges++
	if !r.raced {
		r.raced = true
		gitstoretest.Put(r.t, r.Branch, "/core/configmaps/default/cm", `{"data":{"a":"user"}}`+"\n")
	}
	return r.Branch.Merge(ctx, req)
}

func TestMergeCommitRecomputesWhenTheTargetMoved(t *testing.T) {
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, ctrl, "/core/configmaps/default/cm", `{"data":{"a":"1","b":"ctrl"}}`+"\n")
	target := &racingTarget{Branch: main, t: t}
	out, err := gitstore.MergeCommit(context.Background(), repo, target, ctrl.Head(), gitstore.MergeCommitOptions{Merger: merge.Merger{Policy: merge.Policy{Default: merge.PreferSource}}})
	require.NoError(t, err)
	assert.Equal(t, 2, target.merges, "computed again on the moved head")
	require.Len(t, out.Conflicts, 0, "a: user changed it, ctrl did not; b: only ctrl")
	assert.JSONEq(t, `{"data":{"a":"user","b":"ctrl"}}`, gitstoretest.Value(t, main, "/core/configmaps/default/cm"), "the concurrent write is kept")
}

func TestMergeCommitUnrelatedHistoriesMergeWithoutBase(t *testing.T) {
	repo, main, _ := gitstoretest.Pair(t)
	other, err := repo.Branch(context.Background(), "other")
	require.NoError(t, err)
	gitstoretest.Put(t, other, "/core/configmaps/default/only-other", `{"data":{}}`+"\n")
	out := gitstoretest.MergeInto(t, repo, main, other, merge.Policy{})
	assert.Equal(t, plumbing.ZeroHash, out.Base)
	assert.Equal(t, 1, out.Changes)
	assert.NotEmpty(t, gitstoretest.Value(t, main, "/core/configmaps/default/only-other"))
}

// gadgetsCRD keys the items of .spec.parts by "id".
const gadgetsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"gadgets.example.com"},
"spec":{"group":"example.com","names":{"plural":"gadgets","kind":"Gadget"},"scope":"Namespaced",
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object",
"properties":{"spec":{"type":"object","properties":{"parts":{"type":"array",
"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["id"],
"items":{"type":"object","properties":{"id":{"type":"string"},"size":{"type":"integer"}}}}}}}}}}]}}` + "\n"

func gadget(a, b int) string {
	return fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g","namespace":"default"},`+
		`"spec":{"parts":[{"id":"a","size":%d},{"id":"b","size":%d}]}}`+"\n", a, b)
}

// A custom resource whose list is keyed by "id" (not the heuristic's
// "name"): edits of different items on the two sides merge cleanly, by the
// list rules of the CRD in the heavens.
func TestMergeCommitTakesListKeysFromCRDs(t *testing.T) {
	const g = "/example.com/gadgets/default/g"
	repo, main, ctrl := gitstoretest.Pair(t)
	gitstoretest.Put(t, main, "/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com", gadgetsCRD)
	gitstoretest.Put(t, main, g, gadget(1, 1))
	out := gitstoretest.MergeInto(t, repo, ctrl, main, merge.Policy{})
	require.False(t, out.Written.Commit.IsZero())

	gitstoretest.Put(t, main, g, gadget(2, 1))
	gitstoretest.Put(t, ctrl, g, gadget(1, 3))
	out = gitstoretest.MergeInto(t, repo, main, ctrl, merge.Policy{})
	assert.Empty(t, out.Conflicts)
	require.False(t, out.Blocked)
	assert.JSONEq(t, gadget(2, 3), gitstoretest.Value(t, main, g))
}

// After criss-cross merges (two heavens that merged each other's earlier
// heads) there are two best merge bases, each lacking an object the other
// has. Either alone makes that object look added on both sides, its
// one-sided edits conflicts; the virtual base that merges them, as git's
// recursive strategies build it, merges cleanly.
func TestMergeCommitCrissCrossMergesFromAVirtualBase(t *testing.T) {
	ctx := context.Background()
	repo, main, sched := gitstoretest.Pair(t)
	const pod, cm = "/core/pods/default/p", "/core/configmaps/default/q"
	gitstoretest.Put(t, main, pod, `{"spec":{"image":"nginx"},"status":{"phase":"Pending"}}`+"\n")
	m0 := main.Head()
	gitstoretest.Put(t, sched, cm, `{"data":{"a":"1","b":"1"}}`+"\n")
	// Each merges the other's head as it was: main sched's, sched main's
	// before that merge.
	gitstoretest.MergeInto(t, repo, main, sched, merge.Policy{})
	_, err := gitstore.MergeCommit(ctx, repo, sched, m0, gitstore.MergeCommitOptions{Message: "merge main"})
	require.NoError(t, err)
	bases, err := repo.MergeBases(main.Head(), sched.Head())
	require.NoError(t, err)
	require.Len(t, bases, 2, "criss-cross")

	// Each side edits both objects, different fields.
	gitstoretest.Put(t, main, pod, `{"spec":{"image":"nginx"},"status":{"phase":"Running"}}`+"\n")
	gitstoretest.Put(t, main, cm, `{"data":{"a":"2","b":"1"}}`+"\n")
	gitstoretest.Put(t, sched, pod, `{"spec":{"image":"nginx","nodeName":"n1"},"status":{"phase":"Pending"}}`+"\n")
	gitstoretest.Put(t, sched, cm, `{"data":{"a":"1","b":"2"}}`+"\n")

	out := gitstoretest.MergeInto(t, repo, main, sched, merge.Policy{})
	require.False(t, out.Blocked, "conflicts: %v", out.Conflicts)
	assert.Empty(t, out.Conflicts)
	assert.JSONEq(t, `{"spec":{"image":"nginx","nodeName":"n1"},"status":{"phase":"Running"}}`, gitstoretest.Value(t, main, pod))
	assert.JSONEq(t, `{"data":{"a":"2","b":"2"}}`, gitstoretest.Value(t, main, cm))
}
