package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMergeTree(t *testing.T) {
	const (
		a = "/core/configmaps/default/a"
		b = "/core/configmaps/default/b"
		c = "/core/configmaps/default/c"
	)
	v1 := []byte(`{"metadata":{"name":"x"},"data":{"k":"1"}}` + "\n")
	v2 := []byte(`{"metadata":{"name":"x"},"data":{"k":"2"}}` + "\n")
	v3 := []byte(`{"metadata":{"name":"x"},"data":{"k":"3"}}` + "\n")
	other := []byte(`{"metadata":{"name":"x"},"data":{"j":"1","k":"1"}}` + "\n")
	tests := []struct {
		name                 string
		policy               Policy
		base, target, source map[string][]byte
		changes              []Change
		conflicts            []string
		resolved             bool
	}{{
		name:     "unchanged",
		base:     map[string][]byte{a: v1},
		target:   map[string][]byte{a: v1},
		source:   map[string][]byte{a: v1},
		resolved: true,
	}, {
		name:     "created on the source",
		target:   map[string][]byte{},
		source:   map[string][]byte{a: v1},
		changes:  []Change{{Key: a, Value: v1}},
		resolved: true,
	}, {
		name:     "created on the target",
		target:   map[string][]byte{a: v1},
		source:   map[string][]byte{},
		resolved: true,
	}, {
		name:     "created on both sides alike",
		target:   map[string][]byte{a: v1},
		source:   map[string][]byte{a: v1},
		resolved: true,
	}, {
		name:      "created on both sides differently",
		policy:    Policy{Default: PreferSource},
		target:    map[string][]byte{a: other},
		source:    map[string][]byte{a: v2},
		changes:   []Change{{Key: a, Value: []byte(`{"metadata":{"name":"x"},"data":{"j":"1","k":"2"}}` + "\n")}},
		conflicts: []string{a + ` .data.k PreferSource`},
		resolved:  true,
	}, {
		name:     "deleted on the source",
		base:     map[string][]byte{a: v1, b: v1},
		target:   map[string][]byte{a: v1, b: v2},
		source:   map[string][]byte{b: v1},
		changes:  []Change{{Key: a, Deleted: true}},
		resolved: true,
	}, {
		name:     "deleted on both sides",
		base:     map[string][]byte{a: v1},
		target:   map[string][]byte{},
		source:   map[string][]byte{},
		resolved: true,
	}, {
		name:      "edited on the target, deleted on the source",
		policy:    Policy{Default: PreferSource},
		base:      map[string][]byte{a: v1},
		target:    map[string][]byte{a: v2},
		source:    map[string][]byte{},
		changes:   []Change{{Key: a, Deleted: true}},
		conflicts: []string{a + "  PreferSource"},
		resolved:  true,
	}, {
		name:      "deleted on the target, edited on the source",
		policy:    Policy{Default: PreferSource},
		base:      map[string][]byte{a: v1},
		target:    map[string][]byte{},
		source:    map[string][]byte{a: v2},
		changes:   []Change{{Key: a, Value: v2}},
		conflicts: []string{a + "  PreferSource"},
		resolved:  true,
	}, {
		name:      "edit against delete kept by the target",
		policy:    Policy{Default: PreferTarget},
		base:      map[string][]byte{a: v1},
		target:    map[string][]byte{},
		source:    map[string][]byte{a: v2},
		conflicts: []string{a + "  PreferTarget"},
		resolved:  true,
	}, {
		name:   "edits of different objects",
		base:   map[string][]byte{a: v1, b: v1},
		target: map[string][]byte{a: v2, b: v1},
		source: map[string][]byte{a: v1, b: v3},
		changes: []Change{
			{Key: b, Value: v3},
		},
		resolved: true,
	}, {
		name:   "a per-resource rule",
		policy: Policy{Default: Manual, Rules: []PathRule{{Resource: "core/configmaps", Resolution: PreferTarget}}},
		base:   map[string][]byte{a: v1, c: v1},
		target: map[string][]byte{a: v2, c: v1},
		source: map[string][]byte{a: v3, b: v1},
		changes: []Change{
			{Key: b, Value: v1},
			{Key: c, Deleted: true},
		},
		conflicts: []string{a + " .data.k PreferTarget"},
		resolved:  true,
	}, {
		name:   "Manual writes nothing",
		policy: Policy{Default: Manual},
		base:   map[string][]byte{a: v1, c: v1},
		target: map[string][]byte{a: v2, c: v1},
		source: map[string][]byte{a: v3, b: v1, c: v2},
		conflicts: []string{
			a + " .data.k Manual",
		},
	}, {
		name:     "a present empty value is not absent",
		base:     map[string][]byte{a: nil},
		target:   map[string][]byte{a: nil},
		source:   map[string][]byte{},
		changes:  []Change{{Key: a, Deleted: true}},
		resolved: true,
	}, {
		name:      "values that are not JSON",
		policy:    Policy{Default: PreferSource},
		base:      map[string][]byte{a: []byte("x")},
		target:    map[string][]byte{a: []byte("y")},
		source:    map[string][]byte{a: []byte("z")},
		changes:   []Change{{Key: a, Value: []byte("z")}},
		conflicts: []string{a + "  PreferSource"},
		resolved:  true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Merger{Policy: tt.policy}
			got := m.MergeTree(tt.base, tt.target, tt.source)
			assert.Equal(t, tt.resolved, got.Resolved)
			assert.Equal(t, tt.changes, got.Changes)
			var conflicts []string
			for _, c := range got.Conflicts {
				conflicts = append(conflicts, c.Key+" "+c.Path+" "+string(c.Resolution))
			}
			assert.Equal(t, tt.conflicts, conflicts)
		})
	}
}
