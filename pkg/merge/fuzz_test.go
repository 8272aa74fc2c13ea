package merge

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

var fuzzPolicies = []Policy{
	{Default: PreferSource},
	{Default: PreferTarget},
	{Default: Manual},
	{Default: Manual, Rules: []PathRule{{Path: ".status", Resolution: PreferSource}, {Path: ".spec", Resolution: PreferTarget}}},
}

func addSeeds(f *testing.F) {
	for _, s := range [][3]string{
		{`{"a":1}`, `{"a":2}`, `{"a":3}`},
		{`{"a":1}`, `{"a":1,"b":2}`, `{"c":3}`},
		{``, `{}`, `[]`},
		{`not json`, `{"a":1}`, "a: 1\n"},
		{`{"a":1,"a":2}`, `{"a":1}`, `{"a":"\u0031"}`},
		{`{"metadata":{"generation":1,"resourceVersion":"1","finalizers":["a"]}}`,
			`{"metadata":{"generation":2,"resourceVersion":"2","finalizers":["a","b"]}}`,
			`{"metadata":{"generation":3,"finalizers":[]}}`},
		{`{"metadata":{"managedFields":[{"manager":"a","operation":"Update","time":"2024-01-01T00:00:00Z"}]}}`,
			`{"metadata":{"managedFields":[{"manager":"a","operation":"Update","time":"2024-01-02T00:00:00Z"}]}}`,
			`{"metadata":{"managedFields":[{"manager":"a","operation":"Update","time":"x"},{"manager":"b"}]}}`},
		{`{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80}]}]},"status":{"conditions":[{"type":"Ready","status":"False"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:2","ports":[{"containerPort":80,"protocol":"TCP"}]},{"name":"b"}]},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`,
			`{"spec":{"containers":[{"name":"a","image":"a:3"},{"name":"a"}]},"status":{"conditions":[{"type":"Ready","status":"Unknown"},{"type":"X"}]}}`},
		{`{"metadata":{"labels":{"a":"1","b.c/d":"2"}},"spec":{"x":[1,2],"y":null}}`,
			"{\n  \"metadata\": {\"labels\": {\"a\": \"2\"}},\n  \"spec\": {\"x\": [1, 3], \"y\": {}}\n}\n",
			`{"spec":{"x":[1,2,3],"y":[]},"metadata":{"labels":{"b.c/d":"3","a":"1"}}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), []byte(s[2]))
	}
}

// FuzzMerge merges arbitrary values: never a panic, the same result every
// time, a side that did not change gives way exactly, and JSON comes out of
// JSON.
func FuzzMerge(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, base, target, source []byte) {
		for _, p := range fuzzPolicies {
			m := Merger{Policy: p}
			got := m.Merge(deployKey, base, target, source)
			again := m.Merge(deployKey, base, target, source)
			if !bytes.Equal(got.Value, again.Value) || !reflect.DeepEqual(got.Conflicts, again.Conflicts) {
				t.Fatalf("not deterministic: %q then %q", got.Value, again.Value)
			}
			if !got.Resolved && !bytes.Equal(got.Value, target) {
				t.Fatalf("unresolved merge changed the target to %q", got.Value)
			}
			if got.Resolved && json.Valid(target) && json.Valid(source) && !json.Valid(got.Value) {
				t.Fatalf("merge of JSON is not JSON: %q", got.Value)
			}
			for _, x := range [][]byte{target, source} {
				for _, r := range []Result{m.Merge(deployKey, base, x, x), m.Merge(deployKey, base, base, x), m.Merge(deployKey, base, x, base)} {
					if !bytes.Equal(r.Value, x) || len(r.Conflicts) > 0 {
						t.Fatalf("merge with an unchanged side: got %q, want %q", r.Value, x)
					}
				}
			}
			// The same holds when the base is the same value written
			// differently (and the target is not, or either side will do).
			if n := parseValue(base); n.kind != kindOpaque && !equal(n, parseValue(target)) {
				var ind bytes.Buffer
				_ = json.Indent(&ind, base, "", "  ")
				for _, r := range []Result{m.Merge(deployKey, ind.Bytes(), target, base), m.Merge(deployKey, ind.Bytes(), base, target)} {
					if !bytes.Equal(r.Value, target) || len(r.Conflicts) > 0 {
						t.Fatalf("merge with a side equal to a reformatted base: got %q, want %q", r.Value, target)
					}
				}
			}
		}
	})
}

// FuzzMergePatches derives both sides from a base by JSON merge patches, so
// that the sides are related the way edits of one object are: the merge is
// JSON, and edits of different top-level fields merge without conflict into
// both edits applied.
func FuzzMergePatches(f *testing.F) {
	addSeeds(f)
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"web"}]}}},"status":{"replicas":1}}`),
		[]byte(`{"spec":{"replicas":3,"paused":true,"template":{"metadata":{"labels":{"a":"b"}}}}}`),
		[]byte(`{"spec":{"template":{"spec":{"hostNetwork":true}}},"status":{"replicas":null,"readyReplicas":3}}`))
	f.Fuzz(func(t *testing.T, base, patchT, patchS []byte) {
		b, ok1 := decode(base)
		pt, ok2 := decode(patchT)
		ps, ok3 := decode(patchS)
		if !ok1 || !ok2 || !ok3 || parseValue(base).kind == kindOpaque {
			return
		}
		target, source := encode(t, applyPatch(b, pt)), encode(t, applyPatch(b, ps))
		for _, p := range fuzzPolicies {
			m := Merger{Policy: p}
			got := m.Merge(deployKey, base, target, source)
			if got.Resolved && !json.Valid(got.Value) {
				t.Fatalf("merge of JSON is not JSON: %q", got.Value)
			}
			if !disjoint(pt, ps, true) {
				continue
			}
			if !got.Resolved || len(got.Conflicts) > 0 {
				t.Fatalf("edits of different fields conflict: %v", got.Conflicts)
			}
			merged, _ := decode(got.Value)
			if want := applyPatch(applyPatch(b, pt), ps); !reflect.DeepEqual(merged, want) {
				t.Fatalf("merge is %s, want %s", got.Value, encode(t, want))
			}
		}
	})
}

func decode(b []byte) (any, bool) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || d.More() {
		return nil, false
	}
	return v, true
}

func encode(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// applyPatch applies a JSON merge patch (RFC 7386).
func applyPatch(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	out := map[string]any{}
	if dm, ok := doc.(map[string]any); ok {
		for k, v := range dm {
			out[k] = v
		}
	}
	for k, v := range pm {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = applyPatch(out[k], v)
	}
	return out
}

// disjoint: two object patches that touch different fields, at any depth,
// and not the object's metadata (whose fields merge by rules of their own).
func disjoint(a, b any, top bool) bool {
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	for k, av := range am {
		if top && k == "metadata" {
			return false
		}
		if bv, ok := bm[k]; ok && !disjoint(av, bv, false) {
			return false
		}
	}
	_, ok := bm["metadata"]
	return !top || !ok
}
