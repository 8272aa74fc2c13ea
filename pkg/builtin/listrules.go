package builtin

import (
	"encoding/json"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	"github.com/heaven-dev/heaven/pkg/merge"
)

// ListRules says how the lists of every built-in resource merge, from
// Kubernetes' OpenAPI definitions of their stored types: by
// x-kubernetes-list-type and -list-map-keys, else by the strategic merge
// patch key (x-kubernetes-patch-merge-key) — what server-side apply and
// strategic merge patches follow. Computed once.
var ListRules = sync.OnceValue(func() []merge.ListRule {
	defs := kubeopenapi.GetOpenAPIDefinitions(func(name string) spec.Ref { return spec.MustCreateRef(name) })
	var rules []merge.ListRule
	for _, r := range Resources(true) {
		obj, err := NewStored(r)
		if err != nil {
			continue
		}
		def, ok := defs[modelName(obj)]
		if !ok {
			continue
		}
		data, err := json.Marshal(resolve(defs, def.Schema, map[string]bool{}))
		if err != nil {
			continue
		}
		more, err := merge.SchemaListRules(resourceName(r.GroupResource), data)
		if err != nil {
			klog.ErrorS(err, "No list rules from the schema", "resource", r.GroupResource)
			continue
		}
		rules = append(rules, more...)
	}
	return rules
})

// modelName is the name kube's OpenAPI definitions know obj's type by.
func modelName(obj any) string {
	if m, ok := obj.(interface{ OpenAPIModelName() string }); ok {
		return m.OpenAPIModelName()
	}
	t := reflect.TypeOf(obj).Elem()
	return t.PkgPath() + "." + t.Name()
}

// resourceName is the "<group or core>/<resource>" merges name resources by.
func resourceName(gr schema.GroupResource) string {
	group := gr.Group
	if group == "" {
		group = "core"
	}
	return group + "/" + gr.Resource
}

// resolve returns the parts of s that locate lists (properties, items and
// the list extensions) with references replaced by their definitions;
// a type met again below itself is cut off there.
func resolve(defs map[string]common.OpenAPIDefinition, s spec.Schema, seen map[string]bool) map[string]any {
	if ref := s.Ref.String(); ref != "" {
		def, ok := defs[ref]
		if !ok || seen[ref] {
			return map[string]any{}
		}
		seen[ref] = true
		defer delete(seen, ref)
		out := resolve(defs, def.Schema, seen)
		copyListExtensions(out, s.Extensions) // the referring field's own say wins
		return out
	}
	out := map[string]any{}
	if len(s.Type) > 0 {
		out["type"] = s.Type[0]
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			props[name] = resolve(defs, p, seen)
		}
		out["properties"] = props
	}
	if s.Items != nil && s.Items.Schema != nil {
		out["items"] = resolve(defs, *s.Items.Schema, seen)
	}
	copyListExtensions(out, s.Extensions)
	return out
}

func copyListExtensions(out map[string]any, ext spec.Extensions) {
	for _, k := range []string{"x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-patch-merge-key"} {
		if v, ok := ext[k]; ok {
			out[k] = v
		}
	}
}
