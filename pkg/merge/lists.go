package merge

import (
	"encoding/json"
	"strings"
)

// ListType says how a list merges, in the terms of server-side apply's
// x-kubernetes-list-type.
type ListType string

const (
	// ListAtomic lists are one value: both sides changing one is a conflict.
	ListAtomic ListType = "atomic"
	// ListMap lists hold objects identified by their Keys; items merge one
	// by one, and each item's fields merge as an object's do.
	ListMap ListType = "map"
	// ListSet lists hold distinct scalars; additions and removals of both
	// sides all apply, and never conflict.
	ListSet ListType = "set"
)

// ListRule says how the lists at one path merge.
type ListRule struct {
	// Resource restricts the rule to one resource, "<group or core>/<resource>";
	// empty for every resource. A rule for the resource wins over one for all.
	Resource string
	// Path is the list's JSON path without item selectors:
	// ".spec.template.spec.containers", ".spec.template.spec.containers.ports".
	Path string
	Type ListType
	// Keys identify the items of a ListMap. The first must be in every item;
	// the others may be absent (absent is a value of its own).
	Keys []string
}

// listRule returns how the list at p merges: by the caller's rule for its
// path, else by the default heuristic. metadata.managedFields always
// merges entry by entry (managedFieldsEntry): Kubernetes' schema calls it
// atomic, which would make every two edits of an object in different
// seconds a conflict over who managed what.
func (x *merger) listRule(p path) ListRule {
	if p.schema == managedFieldsPath {
		return defaultListRule(p)
	}
	rule, found := ListRule{}, false
	for _, r := range x.lists {
		if r.Path != p.schema || r.Resource != "" && r.Resource != x.resource {
			continue
		}
		if !found || rule.Resource == "" && r.Resource != "" {
			rule, found = r, true
		}
	}
	if found {
		return rule
	}
	return defaultListRule(p)
}

// defaultListRule knows the list keys of the Kubernetes API, by the list's
// field name (Kubernetes uses the same name for the same kind of list), and
// otherwise merges lists of objects by "name". A rule whose keys the items
// do not carry, uniquely, falls back to atomic when the list is merged.
func defaultListRule(p path) ListRule {
	byKeys := func(keys ...string) ListRule { return ListRule{Type: ListMap, Keys: keys} }
	switch p.name {
	case "finalizers":
		return ListRule{Type: ListSet}
	case "conditions":
		return byKeys("type")
	case "managedFields":
		return byKeys("manager", "operation", "subresource")
	case "ownerReferences":
		return byKeys("uid")
	case "volumeMounts":
		return byKeys("mountPath")
	case "volumeDevices":
		return byKeys("devicePath")
	case "ports":
		if strings.HasSuffix(p.parent, "ontainers") { // containers, initContainers, ephemeralContainers
			return byKeys("containerPort", "protocol")
		}
		return byKeys("port", "protocol")
	}
	return byKeys("name")
}

// mergeList merges two lists by their rule; ok is false for an atomic list,
// or one whose items do not fit its rule. A list the base had and one side
// does not is that side emptying it, as Kubernetes omits empty lists; an
// empty merge of such a list is omitted too.
func (x *merger) mergeList(p path, base, target, source *node) (*node, bool) {
	var v *node
	ok := false
	switch rule := x.listRule(p); rule.Type {
	case ListMap:
		v, ok = x.mergeMapList(p, rule.Keys, base, orEmpty(target), orEmpty(source))
	case ListSet:
		v, ok = mergeSetList(base, orEmpty(target), orEmpty(source))
	}
	if ok && len(v.items) == 0 && (target == nil || source == nil) {
		return nil, true
	}
	return v, ok
}

func isList(n *node) bool { return n != nil && n.kind == kindArray }

func listOrAbsent(n *node) bool { return n == nil || n.kind == kindArray }

// orEmpty is n, or an empty list for an absent n.
func orEmpty(n *node) *node {
	if n == nil {
		return &node{kind: kindArray, raw: []byte("[]")}
	}
	return n
}

// itemOrder orders the items of a merged list: the target's, then those only
// the source has, in its order. keep drops the items the merge removed.
func itemOrder(target, source []string, keep func(string) bool) []string {
	out := make([]string, 0, len(target)+len(source))
	inTarget := make(map[string]bool, len(target))
	for _, id := range target {
		inTarget[id] = true
		if keep(id) {
			out = append(out, id)
		}
	}
	for _, id := range source {
		if !inTarget[id] && keep(id) {
			out = append(out, id)
		}
	}
	return out
}

// mergeMapList merges lists item by item, items identified by keys.
func (x *merger) mergeMapList(p path, keys []string, base, target, source *node) (*node, bool) {
	if len(keys) == 0 {
		return nil, false
	}
	_, bItems, ok1 := keyItems(base, keys)
	tIDs, tItems, ok2 := keyItems(target, keys)
	sIDs, sItems, ok3 := keyItems(source, keys)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	merged := make(map[string]*node, len(tIDs)+len(sIDs))
	one := func(id string) {
		if p.schema == managedFieldsPath {
			merged[id] = managedFieldsEntry(bItems[id], tItems[id], sItems[id])
			return
		}
		merged[id] = x.merge(p.item(id), bItems[id], tItems[id], sItems[id])
	}
	for _, id := range tIDs {
		one(id)
	}
	for _, id := range sIDs {
		if tItems[id] == nil {
			one(id)
		}
	}
	out := &node{kind: kindArray}
	for _, id := range itemOrder(tIDs, sIDs, func(id string) bool { return merged[id] != nil }) {
		out.items = append(out.items, merged[id])
	}
	return settle(out, target, source), true
}

// keyItems identifies the items of a list by keys: ids in order ("name=\"web\"",
// also the item's selector in paths) and items by id. ok is false when an
// item is not an object, lacks the first key, has a key that is not a
// scalar, or shares its id. A value that is not a list has no items.
func keyItems(list *node, keys []string) (ids []string, items map[string]*node, ok bool) {
	items = map[string]*node{}
	if list == nil || list.kind != kindArray {
		return nil, items, true
	}
	for _, it := range list.items {
		if it.kind != kindObject || it.get(keys[0]) == nil {
			return nil, nil, false
		}
		var id []string
		for _, k := range keys {
			v := it.get(k)
			if v == nil {
				continue
			}
			c, scalar := canonical(v)
			if !scalar {
				return nil, nil, false
			}
			id = append(id, k+"="+c)
		}
		s := strings.Join(id, ",")
		if items[s] != nil {
			return nil, nil, false
		}
		ids, items[s] = append(ids, s), it
	}
	return ids, items, true
}

// mergeSetList merges lists of distinct scalars: an item is in the result
// when the side that changed its presence says so.
func mergeSetList(base, target, source *node) (*node, bool) {
	_, bItems, ok1 := setItems(base)
	tIDs, tItems, ok2 := setItems(target)
	sIDs, sItems, ok3 := setItems(source)
	if !ok1 || !ok2 || !ok3 {
		return nil, false
	}
	keep := func(id string) bool {
		b, t, s := bItems[id] != nil, tItems[id] != nil, sItems[id] != nil
		if b == t {
			return s
		}
		return t
	}
	out := &node{kind: kindArray}
	for _, id := range itemOrder(tIDs, sIDs, keep) {
		it := tItems[id]
		if it == nil {
			it = sItems[id]
		}
		out.items = append(out.items, it)
	}
	return settle(out, target, source), true
}

// setItems identifies the items of a set by their canonical JSON; ok is
// false when one is not a scalar or repeats.
func setItems(list *node) (ids []string, items map[string]*node, ok bool) {
	items = map[string]*node{}
	if list == nil || list.kind != kindArray {
		return nil, items, true
	}
	for _, it := range list.items {
		c, scalar := canonical(it)
		if !scalar || items[c] != nil {
			return nil, nil, false
		}
		ids, items[c] = append(ids, c), it
	}
	return ids, items, true
}

// canonical is the JSON of a scalar in one spelling, so that "\u0061" and
// "a" are the same key.
func canonical(n *node) (string, bool) {
	switch n.kind {
	case kindString:
		b, _ := json.Marshal(n.text) // a string always marshals
		return string(b), true
	case kindNumber, kindBool:
		return n.text, true
	}
	return "", false
}
