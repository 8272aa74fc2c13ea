package merge

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
)

// Merger merges objects from their common base. The zero value resolves no
// conflict (Manual) and picks list keys by the default heuristic.
type Merger struct {
	// Policy resolves conflicts.
	Policy Policy
	// Lists say how lists merge where the default heuristic would be wrong;
	// see ListRule.
	Lists []ListRule
}

// Result is the merge of one object.
type Result struct {
	// Value is the merged value, nil when the object is absent from the
	// merge (deleted, or never there). When the merge is not Resolved it is
	// the target's value: the target stays as it is.
	Value []byte
	// Conflicts are every conflict found, in the order of the object's
	// fields, with how each was resolved.
	Conflicts []Conflict
	// Resolved is false when a conflict was resolved Manual.
	Resolved bool
}

// Merge merges the source's version of one object into the target's from
// their common base. A nil value is absent: base is nil for an object created
// on both sides (a two-way merge), target or source for a deleted one. Key
// names the object in the store, "/apps/deployments/default/web" or its file
// "apps/deployments/default/web.json"; its first two segments are the
// resource that policy rules and list rules are matched against.
//
// A value equal to one of the inputs is returned as exactly those bytes (it
// may share their memory), so an object unchanged on both sides, or changed
// on one side only, comes out byte for byte as it went in. Otherwise the
// value is compact JSON, in which what the merge kept of a side is that
// side's bytes; fields are ordered as the API server writes them (sorted
// where both sides are sorted, else the target's order with each field only
// the source has after its predecessor in the source), list items in the
// target's order followed by the source's new items, and the value ends in
// a newline if the target's does (the API server writes "…}\n").
func (m Merger) Merge(key string, base, target, source []byte) Result {
	switch {
	case sameBytes(target, source), sameBytes(base, source):
		return Result{Value: target, Resolved: true}
	case sameBytes(base, target):
		return Result{Value: source, Resolved: true}
	case base != nil && (target == nil && terminating(source) || source == nil && terminating(target)):
		// Deleted on one side, on its way out on the other (its deletion
		// waited there for finalizers or a kubelet): not an edit against a
		// delete, the same deletion finished first on one side.
		return Result{Resolved: true}
	case base != nil && (target == nil && onlyStatusChanged(base, source) || source == nil && onlyStatusChanged(base, target)):
		// Deleted on one side, its status reported on the other: a
		// controller's report on an object its owner deleted, which an API
		// server would have refused (404) had both been one.
		return Result{Resolved: true}
	}
	x := &merger{policy: m.Policy, lists: m.Lists, key: key, resource: resourceOf(key)}
	b, t, s := parsePresent(base), parsePresent(target), parsePresent(source)
	merged := nextGeneration(x.merge(path{}, b, t, s), t, s)
	res := Result{Conflicts: x.conflicts, Resolved: true, Value: target}
	for _, c := range x.conflicts {
		if c.Resolution == Manual {
			res.Resolved = false
		}
	}
	if !res.Resolved && base == nil && sameButIdentity(target, source) {
		// Created on both sides alike: the same bootstrap object (a system
		// PriorityClass, a default ServiceCIDR) that each API server wrote
		// for itself. Where the policy leaves its identity to be resolved
		// by hand, it is one object, the target's.
		for i := range res.Conflicts {
			if res.Conflicts[i].Resolution == Manual {
				res.Conflicts[i].Resolution = PreferTarget
			}
		}
		return Result{Value: target, Conflicts: res.Conflicts, Resolved: true}
	}
	if res.Resolved {
		res.Value = valueBytes(merged, t, s, target, source)
	}
	return res
}

// terminating says whether v is an object being deleted (it has a
// deletionTimestamp).
func terminating(v []byte) bool {
	var o struct {
		Metadata struct {
			DeletionTimestamp *string `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	return v != nil && json.Unmarshal(v, &o) == nil && o.Metadata.DeletionTimestamp != nil && *o.Metadata.DeletionTimestamp != ""
}

// onlyStatusChanged says whether edited is base with only its status, and
// what the API server writes along with it, changed.
func onlyStatusChanged(base, edited []byte) bool {
	return edited != nil && sameBut(base, edited, []string{"status"}, []string{"resourceVersion", "managedFields"})
}

// assignedOnCreate are the fields of metadata that the API server, not the
// writer, sets when it creates an object.
var assignedOnCreate = []string{"uid", "creationTimestamp", "resourceVersion", "generation", "managedFields"}

// sameButIdentity says whether a and b are the same object but for the
// fields the API server assigns on create.
func sameButIdentity(a, b []byte) bool {
	return sameBut(a, b, nil, assignedOnCreate)
}

// sameBut says whether objects a and b are equal but for their top-level
// fields fields and their metadata's fields meta.
func sameBut(a, b []byte, fields, meta []string) bool {
	if a == nil || b == nil {
		return false
	}
	var x, y map[string]any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	for _, o := range []map[string]any{x, y} {
		for _, f := range fields {
			delete(o, f)
		}
		if m, ok := o["metadata"].(map[string]any); ok {
			for _, f := range meta {
				delete(m, f)
			}
		}
	}
	return reflect.DeepEqual(x, y)
}

// sameBytes compares two values, nil (absent) only equal to nil.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func parsePresent(v []byte) *node {
	if v == nil {
		return nil
	}
	return parseValue(v)
}

// valueBytes turns the merged root into the stored value: one side's exact
// bytes when it is that side's root, else compact JSON with the target's
// trailing newline (the source's for a value the target does not have).
func valueBytes(merged, t, s *node, target, source []byte) []byte {
	switch merged {
	case nil:
		return nil
	case t:
		return target
	case s:
		return source
	}
	out := appendValue(nil, merged)
	nl := target
	if nl == nil {
		nl = source
	}
	if bytes.HasSuffix(nl, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// resourceOf is "<group>/<resource>" of a store key or file path:
// "/apps/deployments/default/web" → "apps/deployments".
func resourceOf(key string) string {
	parts := strings.SplitN(strings.TrimPrefix(key, "/"), "/", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[0] + "/" + parts[1]
}
