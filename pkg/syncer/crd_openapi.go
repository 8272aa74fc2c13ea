package syncer

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// schemaFromOpenAPI builds the structural schema a CRD needs for kind gvk
// from an OpenAPI v3 document of its group-version (the physical cluster's
// /openapi/v3/apis/<group>/<version>). Kubernetes' published schemas are
// close to structural; what a CRD does not accept is rewritten:
//
//   - $ref and single-element allOf wrappers are inlined (recursive
//     references become objects that keep unknown fields);
//   - oneOf [integer, string] (IntOrString) becomes x-kubernetes-int-or-string,
//     other oneOf/anyOf (Quantity: string or number) keep any value;
//   - objects without properties (RawExtension, FieldsV1) keep unknown fields;
//   - defaults are dropped (the physical cluster defaults what it gets),
//     and with them list-map keys that would rely on them;
//   - the root's metadata is just an object, as CRDs require.
func schemaFromOpenAPI(doc []byte, gvk schema.GroupVersionKind) (*apiextensionsv1.JSONSchemaProps, error) {
	var d struct {
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decoding OpenAPI v3 document: %w", err)
	}
	root, err := findKindSchema(d.Components.Schemas, gvk)
	if err != nil {
		return nil, err
	}
	c := &schemaConverter{schemas: d.Components.Schemas, inProgress: map[string]bool{root: true}}
	out := c.convert(d.Components.Schemas[root])
	out["type"] = "object"
	if props, ok := out["properties"].(map[string]any); ok {
		if _, ok := props["metadata"]; ok {
			props["metadata"] = map[string]any{"type": "object"}
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw, &props); err != nil {
		return nil, fmt.Errorf("schema of %s: %w", gvk, err)
	}
	return &props, nil
}

// findKindSchema is the name of the component schema of gvk.
func findKindSchema(schemas map[string]map[string]any, gvk schema.GroupVersionKind) (string, error) {
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic when a kind appears twice
	for _, name := range names {
		gvks, _ := schemas[name]["x-kubernetes-group-version-kind"].([]any)
		for _, g := range gvks {
			m, _ := g.(map[string]any)
			if m["group"] == gvk.Group && m["version"] == gvk.Version && m["kind"] == gvk.Kind {
				return name, nil
			}
		}
	}
	return "", fmt.Errorf("the OpenAPI v3 document has no schema for %s", gvk)
}

type schemaConverter struct {
	schemas map[string]map[string]any
	// inProgress are the schemas being inlined: a reference to one of them
	// is recursive.
	inProgress map[string]bool
}

// keptFormats are the formats CRD validation knows.
var keptFormats = map[string]bool{
	"int32": true, "int64": true, "float": true, "double": true,
	"byte": true, "date": true, "date-time": true, "duration": true,
}

// convert returns the structural form of OpenAPI schema s.
func (c *schemaConverter) convert(s map[string]any) map[string]any {
	if ref := refOf(s); ref != "" {
		out := c.resolve(ref)
		if d, ok := s["description"].(string); ok {
			out["description"] = d
		}
		return out
	}
	out := map[string]any{}
	if d, ok := s["description"].(string); ok {
		out["description"] = d
	}
	if alts := alternatives(s); alts != nil {
		if sameTypes(alts, "integer", "string") || s["x-kubernetes-int-or-string"] == true {
			out["x-kubernetes-int-or-string"] = true
		} else {
			out["x-kubernetes-preserve-unknown-fields"] = true
		}
		return out
	}
	if s["x-kubernetes-int-or-string"] == true {
		out["x-kubernetes-int-or-string"] = true
		return out
	}
	typ, _ := s["type"].(string)
	if typ == "" {
		out["x-kubernetes-preserve-unknown-fields"] = true
		return out
	}
	out["type"] = typ
	if f, ok := s["format"].(string); ok && keptFormats[f] {
		out["format"] = f
	}
	for _, k := range []string{"enum", "nullable", "maximum", "minimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "x-kubernetes-map-type"} {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	switch typ {
	case "object":
		c.convertObject(s, out)
	case "array":
		c.convertArray(s, out)
	}
	return out
}

func (c *schemaConverter) convertObject(s, out map[string]any) {
	props, _ := s["properties"].(map[string]any)
	if len(props) > 0 {
		conv := map[string]any{}
		for name, p := range props {
			if pm, ok := p.(map[string]any); ok {
				conv[name] = c.convert(pm)
			}
		}
		out["properties"] = conv
		var required []any
		req, _ := s["required"].([]any)
		for _, r := range req {
			if name, ok := r.(string); ok && conv[name] != nil {
				required = append(required, name)
			}
		}
		if len(required) > 0 {
			out["required"] = required
		}
		if s["x-kubernetes-preserve-unknown-fields"] == true {
			out["x-kubernetes-preserve-unknown-fields"] = true
		}
		return
	}
	switch ap := s["additionalProperties"].(type) {
	case map[string]any:
		out["additionalProperties"] = c.convert(ap)
	default:
		out["x-kubernetes-preserve-unknown-fields"] = true
	}
}

func (c *schemaConverter) convertArray(s, out map[string]any) {
	items, _ := s["items"].(map[string]any)
	if items == nil {
		out["items"] = map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		return
	}
	conv := c.convert(items)
	out["items"] = conv
	switch lt, _ := s["x-kubernetes-list-type"].(string); lt {
	case "atomic":
		out["x-kubernetes-list-type"] = lt
	case "set":
		if t, _ := conv["type"].(string); t == "string" || t == "integer" || t == "number" || t == "boolean" {
			out["x-kubernetes-list-type"] = lt
		}
	case "map":
		// Keys must be required (or defaulted, but defaults are dropped).
		keys, _ := s["x-kubernetes-list-map-keys"].([]any)
		req := map[string]bool{}
		for _, r := range asSlice(conv["required"]) {
			if name, ok := r.(string); ok {
				req[name] = true
			}
		}
		ok := len(keys) > 0 && conv["type"] == "object"
		for _, k := range keys {
			if name, isString := k.(string); !isString || !req[name] {
				ok = false
			}
		}
		if ok {
			out["x-kubernetes-list-type"] = "map"
			out["x-kubernetes-list-map-keys"] = keys
		}
	}
}

// resolve inlines the component schema ref names.
func (c *schemaConverter) resolve(ref string) map[string]any {
	name := strings.TrimPrefix(ref, "#/components/schemas/")
	target, ok := c.schemas[name]
	if !ok || c.inProgress[name] {
		return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}
	}
	c.inProgress[name] = true
	defer delete(c.inProgress, name)
	return c.convert(target)
}

// refOf is the reference s stands for: its $ref, or that of its only allOf
// element.
func refOf(s map[string]any) string {
	if ref, ok := s["$ref"].(string); ok {
		return ref
	}
	if all := asSlice(s["allOf"]); len(all) == 1 {
		if m, ok := all[0].(map[string]any); ok {
			if ref, ok := m["$ref"].(string); ok {
				return ref
			}
		}
	}
	return ""
}

// alternatives is the oneOf or anyOf list of s, nil if it has none.
func alternatives(s map[string]any) []any {
	if v := asSlice(s["oneOf"]); len(v) > 0 {
		return v
	}
	if v := asSlice(s["anyOf"]); len(v) > 0 {
		return v
	}
	return nil
}

// sameTypes reports whether alts are exactly schemas of the given types.
func sameTypes(alts []any, types ...string) bool {
	if len(alts) != len(types) {
		return false
	}
	want := map[string]bool{}
	for _, t := range types {
		want[t] = true
	}
	for _, a := range alts {
		m, _ := a.(map[string]any)
		t, _ := m["type"].(string)
		if !want[t] {
			return false
		}
		delete(want, t)
	}
	return true
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
