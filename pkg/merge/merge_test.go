package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// absent stands for a value that is not there.
const absent = "<absent>"

// val is a test value: JSON written readably becomes the compact JSON with a
// trailing newline that the API server stores; anything else is verbatim.
func val(s string) []byte {
	if s == absent {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return []byte(s)
	}
	return append(b.Bytes(), '\n')
}

func conflictStrings(cs []Conflict) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s", c.Path, c.Resolution))
	}
	return out
}

const deployKey = "/apps/deployments/default/web"

func TestMerge(t *testing.T) {
	preferSource := Merger{Policy: Policy{Default: PreferSource}}
	preferTarget := Merger{Policy: Policy{Default: PreferTarget}}
	tests := []struct {
		name                 string
		merger               Merger
		base, target, source string
		want                 string
		conflicts            []string
	}{{
		name:   "status from one side, spec from the other",
		base:   `{"metadata":{"name":"web","generation":1},"spec":{"replicas":1},"status":{"replicas":1}}`,
		target: `{"metadata":{"name":"web","generation":2},"spec":{"replicas":3},"status":{"replicas":1}}`,
		source: `{"metadata":{"name":"web","generation":1},"spec":{"replicas":1},"status":{"replicas":1,"observedGeneration":1}}`,
		want:   `{"metadata":{"name":"web","generation":2},"spec":{"replicas":3},"status":{"replicas":1,"observedGeneration":1}}`,
	}, {
		name:   "different map keys",
		base:   `{"data":{"a":"1","b":"2"}}`,
		target: `{"data":{"a":"x","b":"2"}}`,
		source: `{"data":{"a":"1","c":"3"}}`,
		want:   `{"data":{"a":"x","c":"3"}}`,
	}, {
		name:   "both delete a field",
		base:   `{"a":1,"b":2,"c":3}`,
		target: `{"a":1,"c":4}`,
		source: `{"a":1,"c":3}`,
		want:   `{"a":1,"c":4}`,
	}, {
		name:      "the same field changed differently",
		merger:    preferSource,
		base:      `{"spec":{"replicas":1}}`,
		target:    `{"spec":{"replicas":2}}`,
		source:    `{"spec":{"replicas":3}}`,
		want:      `{"spec":{"replicas":3}}`,
		conflicts: []string{".spec.replicas PreferSource"},
	}, {
		name:      "a field edited on one side, deleted on the other",
		merger:    preferTarget,
		base:      `{"spec":{"paused":false,"replicas":1}}`,
		target:    `{"spec":{"paused":true,"replicas":1}}`,
		source:    `{"spec":{"replicas":2}}`,
		want:      `{"spec":{"paused":true,"replicas":2}}`,
		conflicts: []string{".spec.paused PreferTarget"},
	}, {
		name:      "an object against a scalar",
		merger:    preferSource,
		base:      `{"a":{"b":1}}`,
		target:    `{"a":{"b":2}}`,
		source:    `{"a":"b"}`,
		want:      `{"a":"b"}`,
		conflicts: []string{".a PreferSource"},
	}, {
		name:   "fields only the source has keep their place",
		base:   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
		target: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}}}`,
		source: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default"},"spec":{},"status":{}}`,
		want:   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"default","labels":{"a":"b"}},"spec":{},"status":{}}`,
	}, {
		name: "containers by name",
		base: `{"spec":{"template":{"spec":{"containers":[
			{"name":"web","image":"web:1","env":[{"name":"A","value":"1"}]}]}}}}`,
		target: `{"spec":{"template":{"spec":{"containers":[
			{"name":"web","image":"web:2","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}]}}}}`,
		source: `{"spec":{"template":{"spec":{"containers":[
			{"name":"web","image":"web:1","env":[{"name":"A","value":"one"}]},
			{"name":"sidecar","image":"proxy:1"}]}}}}`,
		want: `{"spec":{"template":{"spec":{"containers":[
			{"name":"web","image":"web:2","env":[{"name":"A","value":"one"},{"name":"B","value":"2"}]},
			{"name":"sidecar","image":"proxy:1"}]}}}}`,
	}, {
		name:   "container ports by containerPort and protocol",
		base:   `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"protocol":"TCP"}]}]}}`,
		target: `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"protocol":"TCP","name":"http"}]}]}}`,
		source: `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":80,"protocol":"UDP"}]}]}}`,
		want:   `{"spec":{"containers":[{"name":"web","ports":[{"containerPort":80,"protocol":"TCP","name":"http"},{"containerPort":80,"protocol":"UDP"}]}]}}`,
	}, {
		name:   "volumeMounts by mountPath",
		base:   `{"spec":{"containers":[{"name":"web","volumeMounts":[{"name":"a","mountPath":"/a"}]}]}}`,
		target: `{"spec":{"containers":[{"name":"web","volumeMounts":[{"name":"a","mountPath":"/a"},{"name":"a","mountPath":"/b"}]}]}}`,
		source: `{"spec":{"containers":[{"name":"web","volumeMounts":[{"name":"a","mountPath":"/a","readOnly":true}]}]}}`,
		want:   `{"spec":{"containers":[{"name":"web","volumeMounts":[{"name":"a","mountPath":"/a","readOnly":true},{"name":"a","mountPath":"/b"}]}]}}`,
	}, {
		name:   "conditions by type",
		base:   `{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`,
		target: `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
		source: `{"status":{"conditions":[{"type":"Ready","status":"False"},{"type":"Progressing","status":"True"}]}}`,
		want:   `{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Progressing","status":"True"}]}}`,
	}, {
		name:      "the same condition changed differently",
		merger:    preferTarget,
		base:      `{"status":{"conditions":[{"type":"Ready","status":"False"}]}}`,
		target:    `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
		source:    `{"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`,
		want:      `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
		conflicts: []string{`.status.conditions[type="Ready"].status PreferTarget`},
	}, {
		name:      "an item edited on one side, deleted on the other",
		merger:    preferSource,
		base:      `{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}`,
		target:    `{"spec":{"containers":[{"name":"a","image":"a:2"},{"name":"b","image":"b:1"}]}}`,
		source:    `{"spec":{"containers":[{"name":"b","image":"b:1"}]}}`,
		want:      `{"spec":{"containers":[{"name":"b","image":"b:1"}]}}`,
		conflicts: []string{`.spec.containers[name="a"] PreferSource`},
	}, {
		name:      "atomic list of scalars",
		merger:    preferSource,
		base:      `{"spec":{"containers":[{"name":"web","args":["a"]}]}}`,
		target:    `{"spec":{"containers":[{"name":"web","args":["a","b"]}]}}`,
		source:    `{"spec":{"containers":[{"name":"web","args":["c"]}]}}`,
		want:      `{"spec":{"containers":[{"name":"web","args":["c"]}]}}`,
		conflicts: []string{`.spec.containers[name="web"].args PreferSource`},
	}, {
		name:      "a list of objects without names is atomic",
		merger:    preferTarget,
		base:      `{"spec":{"tolerations":[{"key":"a"}]}}`,
		target:    `{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}`,
		source:    `{"spec":{"tolerations":[{"key":"a"},{"key":"c"}]}}`,
		want:      `{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}`,
		conflicts: []string{".spec.tolerations PreferTarget"},
	}, {
		name:      "a list with duplicate names is atomic",
		merger:    preferSource,
		base:      `{"items":[{"name":"a"}]}`,
		target:    `{"items":[{"name":"a"},{"name":"b"}]}`,
		source:    `{"items":[{"name":"a"},{"name":"a","x":1}]}`,
		want:      `{"items":[{"name":"a"},{"name":"a","x":1}]}`,
		conflicts: []string{".items PreferSource"},
	}, {
		name:   "a caller's list rule",
		merger: Merger{Lists: []ListRule{{Path: ".spec.tolerations", Type: ListMap, Keys: []string{"key"}}}},
		base:   `{"spec":{"tolerations":[{"key":"a"}]}}`,
		target: `{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}`,
		source: `{"spec":{"tolerations":[{"key":"a"},{"key":"c"}]}}`,
		want:   `{"spec":{"tolerations":[{"key":"a"},{"key":"b"},{"key":"c"}]}}`,
	}, {
		name:      "a caller's list rule for another resource does not apply",
		merger:    Merger{Policy: Policy{Default: PreferTarget}, Lists: []ListRule{{Resource: "core/pods", Path: ".spec.tolerations", Type: ListMap, Keys: []string{"key"}}}},
		base:      `{"spec":{"tolerations":[{"key":"a"}]}}`,
		target:    `{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}`,
		source:    `{"spec":{"tolerations":[{"key":"a"},{"key":"c"}]}}`,
		want:      `{"spec":{"tolerations":[{"key":"a"},{"key":"b"}]}}`,
		conflicts: []string{".spec.tolerations PreferTarget"},
	}, {
		name:   "generation takes the larger",
		base:   `{"metadata":{"generation":1},"spec":{"a":1},"status":{"b":1}}`,
		target: `{"metadata":{"generation":1},"spec":{"a":1},"status":{"b":2}}`,
		source: `{"metadata":{"generation":2},"spec":{"a":2},"status":{"b":1}}`,
		want:   `{"metadata":{"generation":2},"spec":{"a":2},"status":{"b":2}}`,
	}, {
		name:   "a spec both sides edited takes the next generation",
		base:   `{"metadata":{"generation":1},"spec":{"a":1,"b":1}}`,
		target: `{"metadata":{"generation":3},"spec":{"a":2,"b":1}}`,
		source: `{"metadata":{"generation":2},"spec":{"a":1,"b":2}}`,
		want:   `{"metadata":{"generation":4},"spec":{"a":2,"b":2}}`,
	}, {
		name:   "the next generation after the source's when larger",
		base:   `{"metadata":{"generation":9},"spec":{"a":1,"b":1}}`,
		target: `{"metadata":{"generation":10},"spec":{"a":2,"b":1}}`,
		source: `{"metadata":{"generation":11},"spec":{"a":1,"b":2}}`,
		want:   `{"metadata":{"generation":12},"spec":{"a":2,"b":2}}`,
	}, {
		name:      "a conflict resolved against a side at the same generation takes the next",
		merger:    Merger{Policy: Policy{Default: PreferSource}},
		base:      `{"metadata":{"generation":5},"spec":{"size":7},"status":{"observedGeneration":5}}`,
		target:    `{"metadata":{"generation":6},"spec":{"size":20},"status":{"observedGeneration":6}}`,
		source:    `{"metadata":{"generation":6},"spec":{"size":10},"status":{"observedGeneration":5}}`,
		want:      `{"metadata":{"generation":7},"spec":{"size":10},"status":{"observedGeneration":6}}`,
		conflicts: []string{".spec.size PreferSource"},
	}, {
		name:   "resourceVersion is not compared",
		base:   `{"metadata":{"resourceVersion":"1"},"data":{"a":"1"}}`,
		target: `{"metadata":{"resourceVersion":"5"},"data":{"a":"2"}}`,
		source: `{"metadata":{"resourceVersion":"7"},"data":{"a":"1","b":"1"}}`,
		want:   `{"metadata":{"resourceVersion":"5"},"data":{"a":"2","b":"1"}}`,
	}, {
		name: "managedFields by manager, operation and subresource",
		base: `{"metadata":{"managedFields":[
			{"manager":"kubectl","operation":"Apply","time":"2024-01-01T00:00:00Z"},
			{"manager":"ctl","operation":"Update","subresource":"status","time":"2024-01-01T00:00:00Z"}]}}`,
		target: `{"metadata":{"managedFields":[
			{"manager":"kubectl","operation":"Apply","time":"2024-01-03T00:00:00Z"},
			{"manager":"ctl","operation":"Update","subresource":"status","time":"2024-01-05T00:00:00Z"},
			{"manager":"ctl","operation":"Update","time":"2024-01-02T00:00:00Z"}]}}`,
		source: `{"metadata":{"managedFields":[
			{"manager":"kubectl","operation":"Apply","time":"2024-01-04T00:00:00Z"},
			{"manager":"ctl","operation":"Update","subresource":"status","time":"2024-01-02T00:00:00Z"},
			{"manager":"helm","operation":"Update","time":"2024-01-02T00:00:00Z"}]}}`,
		want: `{"metadata":{"managedFields":[
			{"manager":"kubectl","operation":"Apply","time":"2024-01-04T00:00:00Z"},
			{"manager":"ctl","operation":"Update","subresource":"status","time":"2024-01-05T00:00:00Z"},
			{"manager":"ctl","operation":"Update","time":"2024-01-02T00:00:00Z"},
			{"manager":"helm","operation":"Update","time":"2024-01-02T00:00:00Z"}]}}`,
	}, {
		name:   "labels and annotations per key, sorted as the API server writes maps",
		base:   `{"metadata":{"labels":{"app":"web"},"annotations":{"a":"1"}}}`,
		target: `{"metadata":{"labels":{"app":"web","tier":"front"},"annotations":{"a":"2"}}}`,
		source: `{"metadata":{"labels":{"app":"web","app.kubernetes.io/name":"web"},"annotations":{"a":"1","b":"1"}}}`,
		want:   `{"metadata":{"labels":{"app":"web","app.kubernetes.io/name":"web","tier":"front"},"annotations":{"a":"2","b":"1"}}}`,
	}, {
		name:      "a label set differently",
		merger:    preferTarget,
		base:      `{"metadata":{"labels":{}}}`,
		target:    `{"metadata":{"labels":{"app.kubernetes.io/name":"a"}}}`,
		source:    `{"metadata":{"labels":{"app.kubernetes.io/name":"b"}}}`,
		want:      `{"metadata":{"labels":{"app.kubernetes.io/name":"a"}}}`,
		conflicts: []string{`.metadata.labels["app.kubernetes.io/name"] PreferTarget`},
	}, {
		name:   "finalizers are a set",
		base:   `{"metadata":{"finalizers":["a","b"]}}`,
		target: `{"metadata":{"finalizers":["a","b","c"]}}`,
		source: `{"metadata":{"finalizers":["b","d"]}}`,
		want:   `{"metadata":{"finalizers":["b","c","d"]}}`,
	}, {
		name:   "the last finalizer removed on one side, one added on the other",
		base:   `{"metadata":{"name":"x","finalizers":["a"]}}`,
		target: `{"metadata":{"name":"x"}}`,
		source: `{"metadata":{"name":"x","finalizers":["a","b"]}}`,
		want:   `{"metadata":{"name":"x","finalizers":["b"]}}`,
	}, {
		name:   "both empty the finalizers, one omits them",
		base:   `{"metadata":{"finalizers":["a","b"],"labels":{"x":"1"}}}`,
		target: `{"metadata":{"finalizers":[],"labels":{"x":"2"}}}`,
		source: `{"metadata":{"labels":{"x":"1"}}}`,
		want:   `{"metadata":{"labels":{"x":"2"}}}`,
	}, {
		name:   "an item removed on one side, the list omitted on the other",
		base:   `{"spec":{"volumes":[{"name":"a"},{"name":"b"}]}}`,
		target: `{"spec":{"volumes":[{"name":"a"}]}}`,
		source: `{"spec":{}}`,
		want:   `{"spec":{}}`,
	}, {
		name:      "values that are not JSON",
		merger:    preferSource,
		base:      "a: 1\n",
		target:    "a: 2\n",
		source:    "a: 3\n",
		want:      "a: 3\n",
		conflicts: []string{" PreferSource"},
	}, {
		name:   "not JSON, changed on one side",
		base:   "a: 1\n",
		target: "a: 1\n",
		source: "a: 3\n",
		want:   "a: 3\n",
	}, {
		name:      "JSON against not JSON",
		merger:    preferTarget,
		base:      `{"a":1}`,
		target:    `{"a":2}`,
		source:    "a: 3\n",
		want:      `{"a":2}`,
		conflicts: []string{" PreferTarget"},
	}, {
		name:      "created on both sides: a two-way merge",
		merger:    preferTarget,
		base:      absent,
		target:    `{"metadata":{"name":"x","labels":{"a":"1"}},"data":{"k":"t"}}`,
		source:    `{"metadata":{"name":"x","labels":{"b":"1"}},"data":{"k":"s"}}`,
		want:      `{"metadata":{"name":"x","labels":{"a":"1","b":"1"}},"data":{"k":"t"}}`,
		conflicts: []string{".data.k PreferTarget"},
	}, {
		name:      "edited against deleted",
		merger:    preferSource,
		base:      `{"a":1}`,
		target:    `{"a":2}`,
		source:    absent,
		want:      absent,
		conflicts: []string{" PreferSource"},
	}, {
		name:   "deleted against an edit that changes nothing",
		base:   `{"a":1,"b":2}`,
		target: absent,
		source: `{"b":2,"a":1}`,
		want:   absent,
	}, {
		name:   "the same change on both sides keeps the target's bytes",
		base:   `{"a":1}`,
		target: `{"a":2,"b":"<"}`,
		source: `{"b":"\u003c","a":2}`,
		want:   `{"a":2,"b":"<"}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.merger.Merge(deployKey, val(tt.base), val(tt.target), val(tt.source))
			require.True(t, got.Resolved)
			assert.Equal(t, string(val(tt.want)), string(got.Value))
			assert.Equal(t, val(tt.want) == nil, got.Value == nil, "absent")
			assert.Equal(t, tt.conflicts, conflictStrings(got.Conflicts))
		})
	}
}

func TestMergeIdentity(t *testing.T) {
	x := []byte(`{"metadata":{"name":"x","generation":2,"resourceVersion":"9"},"spec":{"b":1,"a":[3,2]}}` + "\n")
	for _, base := range [][]byte{nil, x, []byte(`{}`), []byte("not json"), []byte(`{"spec":{"a":[]}}`)} {
		var m Merger
		got := m.Merge(deployKey, base, x, x)
		assert.Equal(t, x, got.Value, "base %q", base)
		assert.Empty(t, got.Conflicts)
		assert.Equal(t, x, m.Merge(deployKey, base, base, x).Value, "source changed, base %q", base)
		assert.Equal(t, x, m.Merge(deployKey, base, x, base).Value, "target changed, base %q", base)
	}
}

func TestMergeKeepsBytesOfUntouchedFields(t *testing.T) {
	// The target's own spelling of a string survives a merge of other fields.
	base := []byte(`{"a":"\u003cb\u003e","n":1.50,"c":1}` + "\n")
	target := []byte(`{"a":"\u003cb\u003e","n":1.50,"c":2}` + "\n")
	source := []byte(`{"a":"\u003cb\u003e","n":1.50,"c":1,"d":true}` + "\n")
	var m Merger
	got := m.Merge(deployKey, base, target, source)
	assert.Equal(t, `{"a":"\u003cb\u003e","n":1.50,"c":2,"d":true}`+"\n", string(got.Value))
}

func TestMergeTrailingNewline(t *testing.T) {
	var m Merger
	got := m.Merge(deployKey, []byte(`{"a":1,"b":1}`), []byte(`{"a":2,"b":1}`), []byte(`{"a":1,"b":2}`))
	assert.Equal(t, `{"a":2,"b":2}`, string(got.Value), "no newline in, none out")
}

func TestMergeReportsConflictValues(t *testing.T) {
	m := Merger{Policy: Policy{Default: PreferSource}}
	got := m.Merge(deployKey,
		val(`{"spec":{"replicas":1,"paused":false}}`),
		val(`{"spec":{"replicas":2}}`),
		val(`{"spec":{"replicas":3,"paused":true}}`))
	assert.Equal(t, []Conflict{
		{Key: deployKey, Path: ".spec.replicas", Base: []byte("1"), Target: []byte("2"), Source: []byte("3"), Resolution: PreferSource},
		{Key: deployKey, Path: ".spec.paused", Base: []byte("false"), Target: nil, Source: []byte("true"), Resolution: PreferSource},
	}, got.Conflicts)
}

func TestMergePolicies(t *testing.T) {
	base := `{"spec":{"replicas":1,"paused":false},"status":{"replicas":1}}`
	target := `{"spec":{"replicas":2,"paused":false},"status":{"replicas":2}}`
	source := `{"spec":{"replicas":3,"paused":true},"status":{"replicas":3}}`
	tests := []struct {
		name      string
		policy    Policy
		want      string
		conflicts []string
		resolved  bool
	}{{
		name:      "PreferSource",
		policy:    Policy{Default: PreferSource},
		want:      `{"spec":{"replicas":3,"paused":true},"status":{"replicas":3}}`,
		conflicts: []string{".spec.replicas PreferSource", ".status.replicas PreferSource"},
		resolved:  true,
	}, {
		name:      "PreferTarget",
		policy:    Policy{Default: PreferTarget},
		want:      `{"spec":{"replicas":2,"paused":true},"status":{"replicas":2}}`,
		conflicts: []string{".spec.replicas PreferTarget", ".status.replicas PreferTarget"},
		resolved:  true,
	}, {
		name: "status from the source, spec from the target",
		policy: Policy{Default: Manual, Rules: []PathRule{
			{Path: ".status", Resolution: PreferSource},
			{Path: ".spec", Resolution: PreferTarget},
		}},
		want:      `{"spec":{"replicas":2,"paused":true},"status":{"replicas":3}}`,
		conflicts: []string{".spec.replicas PreferTarget", ".status.replicas PreferSource"},
		resolved:  true,
	}, {
		name: "the longest prefix wins",
		policy: Policy{Default: PreferTarget, Rules: []PathRule{
			{Path: ".spec.replicas", Resolution: PreferSource},
			{Path: ".spec", Resolution: PreferTarget},
		}},
		want:      `{"spec":{"replicas":3,"paused":true},"status":{"replicas":2}}`,
		conflicts: []string{".spec.replicas PreferSource", ".status.replicas PreferTarget"},
		resolved:  true,
	}, {
		name: "a rule for the resource wins over one for all",
		policy: Policy{Default: Manual, Rules: []PathRule{
			{Path: ".spec", Resolution: PreferTarget},
			{Resource: "apps/deployments", Path: ".spec", Resolution: PreferSource},
			{Resource: "apps/deployments", Resolution: PreferTarget},
		}},
		want:      `{"spec":{"replicas":3,"paused":true},"status":{"replicas":2}}`,
		conflicts: []string{".spec.replicas PreferSource", ".status.replicas PreferTarget"},
		resolved:  true,
	}, {
		name: "a rule for another resource does not apply",
		policy: Policy{Default: PreferTarget, Rules: []PathRule{
			{Resource: "core/pods", Path: ".spec", Resolution: PreferSource},
		}},
		want:      `{"spec":{"replicas":2,"paused":true},"status":{"replicas":2}}`,
		conflicts: []string{".spec.replicas PreferTarget", ".status.replicas PreferTarget"},
		resolved:  true,
	}, {
		name:      "Manual leaves the target untouched",
		policy:    Policy{Default: Manual},
		want:      target,
		conflicts: []string{".spec.replicas Manual", ".status.replicas Manual"},
	}, {
		name:      "the zero policy is Manual",
		want:      target,
		conflicts: []string{".spec.replicas Manual", ".status.replicas Manual"},
	}, {
		name:      "Manual where no rule covers a conflict",
		policy:    Policy{Rules: []PathRule{{Path: ".status", Resolution: PreferSource}}},
		want:      target,
		conflicts: []string{".spec.replicas Manual", ".status.replicas PreferSource"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Merger{Policy: tt.policy}
			got := m.Merge(deployKey, val(base), val(target), val(source))
			assert.Equal(t, tt.resolved, got.Resolved)
			assert.Equal(t, string(val(tt.want)), string(got.Value))
			assert.Equal(t, tt.conflicts, conflictStrings(got.Conflicts))
		})
	}
}

func TestMergeIsDeterministic(t *testing.T) {
	m := Merger{Policy: Policy{Default: PreferSource}}
	base := val(`{"a":{"x":1,"y":1},"l":[{"name":"a"},{"name":"b"}]}`)
	target := val(`{"a":{"x":2,"y":1,"p":1,"q":2},"l":[{"name":"b","v":1},{"name":"c"}]}`)
	source := val(`{"a":{"x":3,"r":1,"s":2},"l":[{"name":"d"},{"name":"a","v":1},{"name":"b","v":2}]}`)
	first := m.Merge(deployKey, base, target, source)
	for range 20 {
		again := m.Merge(deployKey, base, target, source)
		require.Equal(t, string(first.Value), string(again.Value))
		require.Equal(t, first.Conflicts, again.Conflicts)
	}
}

// TestDeletionFinishedOnOneSide: an object deleted on one side and only
// terminating on the other (deletionTimestamp set) is deleted, without a
// conflict; an object edited otherwise against a delete still conflicts.
func TestDeletionFinishedOnOneSide(t *testing.T) {
	base := []byte(`{"metadata":{"name":"p"},"spec":{"nodeName":"n"}}`)
	terminating := []byte(`{"metadata":{"name":"p","deletionTimestamp":"2026-11-25T00:00:00Z"},"spec":{"nodeName":"n"}}`)
	edited := []byte(`{"metadata":{"name":"p","labels":{"a":"b"}},"spec":{"nodeName":"n"}}`)
	m := Merger{}
	for name, tc := range map[string]struct{ target, source []byte }{
		"deleted in the source": {terminating, nil},
		"deleted in the target": {nil, terminating},
	} {
		r := m.Merge("/core/pods/default/p", base, tc.target, tc.source)
		assert.True(t, r.Resolved, name)
		assert.Nil(t, r.Value, name)
		assert.Empty(t, r.Conflicts, name)
	}
	r := m.Merge("/core/pods/default/p", base, edited, nil)
	assert.False(t, r.Resolved, "an edit against a delete")
	assert.Len(t, r.Conflicts, 1)
}

// TestCreatedOnBothSidesAlike: an object created on both sides that differs
// only in what the API server assigns on create (a bootstrap object each
// heaven wrote for itself) merges as the target's where the policy would
// leave it to be resolved by hand; created on both sides with different
// contents, it still conflicts.
func TestCreatedOnBothSidesAlike(t *testing.T) {
	const key = "/scheduling.k8s.io/priorityclasses/system-node-critical"
	target := []byte(`{"kind":"PriorityClass","metadata":{"name":"system-node-critical","uid":"a","creationTimestamp":"2026-11-25T06:42:32Z","resourceVersion":"5","managedFields":[{"manager":"heaven-server","time":"2026-11-25T06:42:32Z"}]},"value":2000001000}` + "\n")
	source := []byte(`{"kind":"PriorityClass","metadata":{"name":"system-node-critical","uid":"b","creationTimestamp":"2026-11-25T06:42:33Z","resourceVersion":"9","managedFields":[{"manager":"heaven-server","time":"2026-11-25T06:42:33Z"}]},"value":2000001000}` + "\n")
	other := []byte(`{"kind":"PriorityClass","metadata":{"name":"system-node-critical","uid":"b","creationTimestamp":"2026-11-25T06:42:33Z"},"value":7}` + "\n")
	m := Merger{}
	r := m.Merge(key, nil, target, source)
	assert.True(t, r.Resolved)
	assert.Equal(t, string(target), string(r.Value))
	for _, c := range r.Conflicts {
		assert.Equal(t, PreferTarget, c.Resolution, "%s", c.Path)
	}

	// A policy that resolves them still decides.
	r = Merger{Policy: Policy{Default: PreferSource}}.Merge(key, nil, target, source)
	assert.True(t, r.Resolved)
	assert.Contains(t, string(r.Value), `"uid":"b"`)

	r = m.Merge(key, nil, target, other)
	assert.False(t, r.Resolved, "created on both sides with different values")
	assert.NotEmpty(t, r.Conflicts)
}

// TestStatusOfADeletedObject: an object deleted on one side whose status
// alone changed on the other (a controller's report) is deleted; a change
// beyond the status still conflicts with the delete.
func TestStatusOfADeletedObject(t *testing.T) {
	const key = "/apps/deployments/default/web"
	base := []byte(`{"metadata":{"name":"web","resourceVersion":"3"},"spec":{"replicas":3},"status":{"replicas":0}}`)
	reported := []byte(`{"metadata":{"name":"web","resourceVersion":"7","managedFields":[{"manager":"kube-controller-manager"}]},"spec":{"replicas":3},"status":{"replicas":3}}`)
	scaled := []byte(`{"metadata":{"name":"web","resourceVersion":"7"},"spec":{"replicas":5},"status":{"replicas":3}}`)
	m := Merger{}
	for name, tc := range map[string]struct{ target, source []byte }{
		"deleted in the target": {nil, reported},
		"deleted in the source": {reported, nil},
	} {
		r := m.Merge(key, base, tc.target, tc.source)
		assert.True(t, r.Resolved, name)
		assert.Nil(t, r.Value, name)
		assert.Empty(t, r.Conflicts, name)
	}
	r := m.Merge(key, base, nil, scaled)
	assert.False(t, r.Resolved, "a spec edit against a delete")
	assert.Len(t, r.Conflicts, 1)
}
