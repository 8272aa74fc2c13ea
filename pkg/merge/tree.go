package merge

import "sort"

// Change is one write that takes the target to the merged tree.
type Change struct {
	Key string
	// Value is the merged value, unless Deleted.
	Value   []byte
	Deleted bool
}

// TreeResult is the merge of two sides' sets of objects.
type TreeResult struct {
	// Changes are the writes that take the target to the merge, by key;
	// none when the merge is not Resolved.
	Changes []Change
	// Conflicts are every conflict found, by key, then in the order of each
	// object's fields.
	Conflicts []Conflict
	// Resolved is false when a conflict was resolved Manual: then nothing is
	// to be written, and the target stays as it is.
	Resolved bool
}

// MergeTree merges the source's objects into the target's from their common
// base. Each map holds one side's objects by key (see Merge); a key missing
// from a map is an object absent on that side, so the maps must cover the
// same keys: whole trees, or the keys the caller found changed. An object
// created on one side is created, one deleted on one side and unchanged on
// the other is deleted, one created on both sides is merged without a base,
// and one edited on one side and deleted on the other is a conflict at path
// "".
func (m Merger) MergeTree(base, target, source map[string][]byte) TreeResult {
	keys := make([]string, 0, len(target)+len(source))
	seen := map[string]bool{}
	for _, side := range []map[string][]byte{base, target, source} {
		for k := range side {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)

	res := TreeResult{Resolved: true}
	for _, k := range keys {
		t, inTarget := lookup(target, k)
		r := m.Merge(k, lookup1(base, k), t, lookup1(source, k))
		res.Conflicts = append(res.Conflicts, r.Conflicts...)
		if !r.Resolved {
			res.Resolved = false
			continue
		}
		switch {
		case r.Value == nil && inTarget:
			res.Changes = append(res.Changes, Change{Key: k, Deleted: true})
		case r.Value != nil && !sameBytes(r.Value, t):
			res.Changes = append(res.Changes, Change{Key: k, Value: r.Value})
		}
	}
	if !res.Resolved {
		res.Changes = nil
	}
	return res
}

// lookup returns a side's value, never nil when present (nil is absent).
func lookup(side map[string][]byte, k string) ([]byte, bool) {
	v, ok := side[k]
	if ok && v == nil {
		v = []byte{}
	}
	return v, ok
}

func lookup1(side map[string][]byte, k string) []byte {
	v, _ := lookup(side, k)
	return v
}
