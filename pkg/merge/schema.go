package merge

import (
	"encoding/json"
	"fmt"
)

// Lists from schemas: a CustomResourceDefinition says how each of its lists
// merges (x-kubernetes-list-type, x-kubernetes-list-map-keys), as
// server-side apply reads it; those rules replace the default heuristic for
// the CRD's resource. Only the parts of a structural schema that locate a
// list are read.

// schemaNode is the part of an OpenAPI v3 schema that locates lists.
type schemaNode struct {
	Type                 string                `json:"type"`
	Properties           map[string]schemaNode `json:"properties"`
	Items                *schemaNode           `json:"items"`
	AdditionalProperties *json.RawMessage      `json:"additionalProperties"`
	ListType             string                `json:"x-kubernetes-list-type"`
	ListMapKeys          []string              `json:"x-kubernetes-list-map-keys"`
	PatchMergeKey        string                `json:"x-kubernetes-patch-merge-key"`
}

// crd is the part of an apiextensions.k8s.io/v1 CustomResourceDefinition
// that names its resource and its stored schema.
type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Plural string `json:"plural"`
		} `json:"names"`
		Versions []struct {
			Storage bool `json:"storage"`
			Schema  *struct {
				OpenAPIV3Schema *schemaNode `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// CRDListRules returns the list rules of the resource a
// CustomResourceDefinition (its JSON) defines, from its storage version's
// schema: the resource's objects are stored in that version. Lists the
// schema leaves untyped keep the default heuristic.
func CRDListRules(crdJSON []byte) ([]ListRule, error) {
	var c crd
	if err := json.Unmarshal(crdJSON, &c); err != nil {
		return nil, fmt.Errorf("reading CustomResourceDefinition: %w", err)
	}
	resource := c.Spec.Group + "/" + c.Spec.Names.Plural
	for _, v := range c.Spec.Versions {
		if v.Storage && v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			return schemaListRules(resource, v.Schema.OpenAPIV3Schema), nil
		}
	}
	return nil, nil
}

// schemaListRules returns the list rules of resource from an OpenAPI v3
// schema of its objects, given as the decoded JSON of the schema.
func schemaListRules(resource string, schema *schemaNode) []ListRule {
	var rules []ListRule
	var walk func(p string, s *schemaNode)
	walk = func(p string, s *schemaNode) {
		if s == nil {
			return
		}
		for name, prop := range s.Properties {
			walk(path{schema: p}.field(name).schema, &prop)
		}
		if s.Items == nil {
			return
		}
		if rule, ok := s.listRule(); ok {
			rule.Resource, rule.Path = resource, p
			rules = append(rules, rule)
		}
		// The items' fields share the list's path: selectors are not part
		// of a rule's path.
		walk(p, s.Items)
	}
	walk("", schema)
	return rules
}

// listRule is how the list s describes merges, if it says.
func (s *schemaNode) listRule() (ListRule, bool) {
	switch s.ListType {
	case "map":
		if len(s.ListMapKeys) > 0 {
			return ListRule{Type: ListMap, Keys: s.ListMapKeys}, true
		}
	case "set":
		return ListRule{Type: ListSet}, true
	case "atomic":
		return ListRule{Type: ListAtomic}, true
	}
	if s.PatchMergeKey != "" {
		return ListRule{Type: ListMap, Keys: []string{s.PatchMergeKey}}, true
	}
	return ListRule{}, false
}

// SchemaListRules returns the list rules of resource ("<group or
// core>/<resource>") from an OpenAPI v3 schema of its objects (its JSON,
// with references resolved): for built-in types, whose schemas come from
// Kubernetes' OpenAPI definitions rather than a CRD.
func SchemaListRules(resource string, schemaJSON []byte) ([]ListRule, error) {
	var s schemaNode
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		return nil, fmt.Errorf("reading the schema of %s: %w", resource, err)
	}
	return schemaListRules(resource, &s), nil
}
