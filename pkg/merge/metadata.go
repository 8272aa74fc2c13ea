package merge

import (
	"strconv"
	"time"
)

// Paths of the object metadata that merge by their own rules.
const (
	generationPath      = ".metadata.generation"
	resourceVersionPath = ".metadata.resourceVersion"
	managedFieldsPath   = ".metadata.managedFields"
)

// metadata merges the metadata fields that are never a conflict:
// resourceVersion is the store's, not the object's, and is kept from the
// target; generation only grows, so both sides bumping it takes the larger.
func (x *merger) metadata(p path, base, target, source *node) (*node, bool) {
	switch p.schema {
	case resourceVersionPath:
		if target != nil {
			return target, true
		}
		return source, true
	case generationPath:
		if target == nil || source == nil || target.kind != kindNumber || source.kind != kindNumber {
			return nil, false
		}
		if less(target.text, source.text) {
			return source, true
		}
		return target, true
	}
	return nil, false
}

// less compares two JSON numbers; integers exactly.
func less(a, b string) bool {
	ai, aerr := strconv.ParseInt(a, 10, 64)
	bi, berr := strconv.ParseInt(b, 10, 64)
	if aerr == nil && berr == nil {
		return ai < bi
	}
	af, _ := strconv.ParseFloat(a, 64)
	bf, _ := strconv.ParseFloat(b, 64)
	return af < bf
}

// managedFieldsEntry merges one entry of metadata.managedFields, a record of
// which manager last set which fields when: the entry an edit touched is
// kept over a deleted one, and of two edits the one with the newer time
// (the target's on a tie), rather than a conflict.
func managedFieldsEntry(base, target, source *node) *node {
	switch {
	case equal(target, source), equal(base, source):
		return target
	case equal(base, target):
		return source
	case target == nil:
		return source
	case source == nil:
		return target
	}
	if newer(source.get("time"), target.get("time")) {
		return source
	}
	return target
}

// newer says whether time a is after time b (RFC 3339, as metav1.Time
// writes it); a time that does not parse is older than one that does.
func newer(a, b *node) bool {
	at, aok := parseTime(a)
	bt, bok := parseTime(b)
	if aok && bok {
		return at.After(bt)
	}
	return aok && !bok
}

func parseTime(n *node) (time.Time, bool) {
	if n == nil || n.kind != kindString {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, n.text)
	return t, err == nil
}

// nextGeneration makes sure that the generation of a merged object tells a
// new spec. Generation takes the larger of the two sides (metadata), which
// is right when the merged spec is that side's; when it is not (both sides
// edited the spec, or a conflict resolved against that side), that side's
// controllers have observed that generation for another spec, and would
// skip this one: the merged object takes the next generation, as the API
// server gives a spec edit. The spec is everything but metadata and status.
func nextGeneration(merged, target, source *node) *node {
	gen := merged.get("metadata").get("generation")
	if gen == nil || gen.kind != kindNumber {
		return merged
	}
	g, err := strconv.ParseInt(gen.text, 10, 64)
	if err != nil {
		return merged
	}
	for _, side := range []*node{target, source} {
		if equal(side.get("metadata").get("generation"), gen) && !equalSpec(merged, side) {
			return withMember(merged, "metadata", withMember(merged.get("metadata"), "generation",
				&node{kind: kindNumber, raw: strconv.AppendInt(nil, g+1, 10), text: strconv.FormatInt(g+1, 10)}))
		}
	}
	return merged
}

// equalSpec compares two objects but for their metadata and status.
func equalSpec(a, b *node) bool {
	spec := func(n *node) int {
		c := 0
		for _, m := range n.members {
			if m.key != "metadata" && m.key != "status" {
				c++
			}
		}
		return c
	}
	if spec(a) != spec(b) {
		return false
	}
	for _, m := range a.members {
		if m.key != "metadata" && m.key != "status" && !equal(m.val, b.get(m.key)) {
			return false
		}
	}
	return true
}

// withMember is object n with member key's value replaced by v: a new
// container, written as compact JSON, that shares n's other members.
func withMember(n *node, key string, v *node) *node {
	out := &node{kind: kindObject, members: make([]member, len(n.members))}
	copy(out.members, n.members)
	for i := range out.members {
		if out.members[i].key == key {
			out.members[i].val = v
		}
	}
	return out
}
