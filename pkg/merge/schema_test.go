package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gadgetsCRD keys .spec.parts by "id", keeps .spec.tags as a set and
// .spec.steps atomic, and leaves .spec.notes to the heuristic. v1 is
// served, v2 stored.
const gadgetsCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gadgets.example.com"},
  "spec": {"group": "example.com", "names": {"plural": "gadgets", "kind": "Gadget"}, "scope": "Namespaced",
    "versions": [
      {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object",
        "properties": {"spec": {"type": "object", "properties": {"parts": {"type": "array",
          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["serial"],
          "items": {"type": "object"}}}}}}}},
      {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object",
        "properties": {"spec": {"type": "object", "properties": {
          "parts": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
            "items": {"type": "object", "properties": {
              "id": {"type": "string"}, "size": {"type": "integer"},
              "labels": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}},
          "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
          "steps": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "object"}},
          "notes": {"type": "array", "items": {"type": "object"}}
        }}}}}}
    ]}
}`

func TestCRDListRules(t *testing.T) {
	rules, err := CRDListRules([]byte(gadgetsCRD))
	require.NoError(t, err)
	assert.ElementsMatch(t, []ListRule{
		{Resource: "example.com/gadgets", Path: ".spec.parts", Type: ListMap, Keys: []string{"id"}},
		{Resource: "example.com/gadgets", Path: ".spec.parts.labels", Type: ListSet},
		{Resource: "example.com/gadgets", Path: ".spec.tags", Type: ListSet},
		{Resource: "example.com/gadgets", Path: ".spec.steps", Type: ListAtomic},
	}, rules, "the storage version's rules; untyped lists keep the heuristic")

	_, err = CRDListRules([]byte("{not json"))
	require.Error(t, err)
}

// A list keyed by "id" (not "name"): two edits to different items merge
// cleanly with the schema's rules, and conflict without them (the
// heuristic's "name" key is missing, so the list is atomic).
func TestSchemaKeyedListMerges(t *testing.T) {
	const key = "/example.com/gadgets/default/g"
	base := []byte(`{"spec":{"parts":[{"id":"a","size":1},{"id":"b","size":1}]}}`)
	target := []byte(`{"spec":{"parts":[{"id":"a","size":2},{"id":"b","size":1}]}}`)
	source := []byte(`{"spec":{"parts":[{"id":"a","size":1},{"id":"b","size":3}]}}`)

	without := Merger{}.Merge(key, base, target, source)
	require.False(t, without.Resolved, "without the schema both sides changed one atomic list")

	rules, err := CRDListRules([]byte(gadgetsCRD))
	require.NoError(t, err)
	with := Merger{Lists: rules}.Merge(key, base, target, source)
	require.True(t, with.Resolved, "conflicts: %v", with.Conflicts)
	assert.Empty(t, with.Conflicts)
	assert.JSONEq(t, `{"spec":{"parts":[{"id":"a","size":2},{"id":"b","size":3}]}}`, string(with.Value))
}

// Kubernetes' schema of ObjectMeta calls managedFields atomic; with rules
// taken from it, two edits still merge their managers' entries (the newer
// of each) rather than conflict.
func TestSchemaLeavesManagedFieldsMerging(t *testing.T) {
	const key = "/core/configmaps/default/web"
	rules := []ListRule{{Resource: "core/configmaps", Path: ".metadata.managedFields", Type: ListAtomic}}
	base := []byte(`{"metadata":{"managedFields":[{"manager":"kubectl-patch","operation":"Update","time":"2026-11-27T07:00:00Z"}]},"data":{"color":"green"}}`)
	target := []byte(`{"metadata":{"managedFields":[{"manager":"kubectl-patch","operation":"Update","time":"2026-11-27T07:00:02Z"}]},"data":{"color":"black"}}`)
	source := []byte(`{"metadata":{"managedFields":[{"manager":"kubectl-patch","operation":"Update","time":"2026-11-27T07:00:01Z"}],"labels":{"a":"b"}},"data":{"color":"green"}}`)

	got := Merger{Lists: rules}.Merge(key, base, target, source)
	require.True(t, got.Resolved, "conflicts: %v", got.Conflicts)
	assert.Empty(t, got.Conflicts)
	assert.JSONEq(t, `{"metadata":{"labels":{"a":"b"},"managedFields":[{"manager":"kubectl-patch","operation":"Update","time":"2026-11-27T07:00:02Z"}]},"data":{"color":"black"}}`, string(got.Value))
}
