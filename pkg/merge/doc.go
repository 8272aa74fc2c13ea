// Package merge is the three-way merge of Kubernetes objects that the merge
// controller uses to merge one heaven's branch into another from their git
// merge base. It merges JSON structure, not lines.
//
// # Objects
//
// Merger.Merge merges one object. A side that did not change a value gives
// way to the side that did; when both changed it, objects merge field by
// field and lists item by item where their items have keys, so a
// controller's .status update merges with a user's .spec edit, and two
// edits of different labels, containers or conditions merge too. Anything
// else both sides changed differently is a Conflict.
//
// Lists merge by a ListRule: the caller's for the list's path, else a
// heuristic that knows Kubernetes' list keys by field name (conditions by
// type, volumeMounts by mountPath, container ports by containerPort and
// protocol, ownerReferences by uid, finalizers as a set) and merges any other
// list of objects by name. A list whose items do not carry their keys,
// uniquely, is one atomic value, as are lists of scalars.
//
// Object metadata merges without conflicts where Kubernetes' meaning allows:
// generation takes the larger of the two sides, or the next one when the
// merged spec is not that side's (its controllers have observed that
// generation for another spec), resourceVersion is the
// store's and is kept from the target, and managedFields entries (keyed by
// manager, operation and subresource) keep the one with the newer time,
// whatever a schema says of the list (Kubernetes' calls it atomic).
// Values that are not JSON are compared as bytes.
//
// # Trees
//
// Merger.MergeTree merges two sides' sets of objects: creates and deletes of
// one side apply, an object created on both sides is merged without a base,
// and an edit on one side against a delete on the other is a conflict.
//
// # Conflicts
//
// A Policy resolves each conflict: PreferSource (the branch being merged
// in), PreferTarget, or Manual, by default or by the PathRule with the
// longest path prefix covering the conflict. A merge with a Manual conflict
// writes nothing. Every conflict is reported with its object, path, the
// three values and its resolution. Merges are deterministic.
//
// # Bytes
//
// Inputs are values as the store returns them: compact JSON as the API
// server wrote it, usually with a trailing newline. A merged value that
// equals one side is that side's exact bytes, so that objects the merge does
// not change are not rewritten; a value the merge built is compact JSON
// that keeps each side's bytes for what it takes from it, orders fields as
// the API server would, and keeps the target's trailing newline.
package merge
