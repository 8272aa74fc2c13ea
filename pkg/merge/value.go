package merge

import "sort"

// merger is the state of merging one object.
type merger struct {
	policy    Policy
	lists     []ListRule
	key       string
	resource  string
	conflicts []Conflict
}

// merge merges the value at p. A side that did not change gives way to the
// one that did; when both changed, objects merge per field, lists per item
// where their items have keys, and anything else is a conflict.
func (x *merger) merge(p path, base, target, source *node) *node {
	if v, ok := x.metadata(p, base, target, source); ok {
		return v
	}
	switch {
	case equal(target, source), equal(base, source):
		return target
	case equal(base, target):
		return source
	}
	if target != nil && source != nil && target.kind == kindObject && source.kind == kindObject {
		return x.mergeObject(p, base, target, source)
	}
	// A list the base had and one side omits is that side emptying it.
	if listOrAbsent(target) && listOrAbsent(source) && (target != nil && source != nil || isList(base)) {
		if v, ok := x.mergeList(p, base, target, source); ok {
			return v
		}
	}
	return x.conflict(p, base, target, source)
}

// mergeObject merges two objects field by field. A base that is not an
// object (absent: created on both sides) is the empty object.
func (x *merger) mergeObject(p path, base, target, source *node) *node {
	merged := make(map[string]*node, len(target.members)+len(source.members))
	for _, m := range target.members {
		merged[m.key] = x.merge(p.field(m.key), base.get(m.key), m.val, source.get(m.key))
	}
	for _, m := range source.members {
		if target.get(m.key) == nil {
			merged[m.key] = x.merge(p.field(m.key), base.get(m.key), nil, m.val)
		}
	}
	// Fields both sides deleted stay deleted: merge(base, nil, nil) is nil.

	out := &node{kind: kindObject}
	keys := fieldOrder(memberKeys(target), memberKeys(source), func(k string) bool { return merged[k] != nil })
	for _, k := range keys {
		rawKey := rawKeyOf(target, k)
		if rawKey == nil {
			rawKey = rawKeyOf(source, k)
		}
		out.members = append(out.members, member{key: k, rawKey: rawKey, val: merged[k]})
	}
	return settle(out, target, source)
}

// settle returns the side a merged container equals, so that its bytes are
// kept as they were, preferring the target's.
func settle(merged, target, source *node) *node {
	switch {
	case equal(merged, target):
		return target
	case equal(merged, source):
		return source
	}
	return merged
}

func memberKeys(n *node) []string {
	keys := make([]string, len(n.members))
	for i, m := range n.members {
		keys[i] = m.key
	}
	return keys
}

func rawKeyOf(n *node, key string) []byte {
	for _, m := range n.members {
		if m.key == key {
			return m.rawKey
		}
	}
	return nil
}

// fieldOrder orders the fields of a merged object as the API server would
// write them. When both sides' fields are sorted (a map, or an unstructured
// object, which encoding/json writes sorted) the merge is sorted too.
// Otherwise (Go struct order) it is the target's order, each field only the
// source has placed after the field that precedes it in the source, at the
// front when none does. keep drops the fields the merge removed.
func fieldOrder(target, source []string, keep func(string) bool) []string {
	if sort.StringsAreSorted(target) && sort.StringsAreSorted(source) {
		out := itemOrder(target, source, keep)
		sort.Strings(out)
		return out
	}
	inTarget := make(map[string]bool, len(target))
	for _, k := range target {
		inTarget[k] = true
	}
	// after[k]: the source-only fields that follow target field k; front:
	// those before every target field.
	var front []string
	after := map[string][]string{}
	anchor, anchored := "", false
	for _, k := range source {
		switch {
		case inTarget[k]:
			if keep(k) {
				anchor, anchored = k, true
			}
		case !keep(k): // removed by the merge
		case anchored:
			after[anchor] = append(after[anchor], k)
		default:
			front = append(front, k)
		}
	}
	out := append(make([]string, 0, len(target)+len(source)), front...)
	for _, k := range target {
		if keep(k) {
			out = append(out, k)
			out = append(out, after[k]...)
		}
	}
	return out
}
