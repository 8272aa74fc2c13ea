package heavenapi

import (
	"sync"

	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"

	builtinopenapi "github.com/heaven-dev/heaven/pkg/generated/openapi"
)

// definitions caches the OpenAPI definitions of every type a heaven serves
// (built-in types and the apiextensions API), per reference style (OpenAPI
// v2 and v3 refer to definitions differently). Every heaven asks for them
// when it starts; building them each time would cost every start
// milliseconds and megabytes for the same answer.
var definitions struct {
	sync.Mutex
	byRefStyle map[string]map[string]common.OpenAPIDefinition
}

// getDefinitions is a common.GetOpenAPIDefinitions whose result is shared:
// callers must not modify it (k8s.io/kube-openapi's builders copy what they
// change).
func getDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	style := refStyle(ref)
	definitions.Lock()
	defer definitions.Unlock()
	if defs, ok := definitions.byRefStyle[style]; ok {
		return defs
	}
	defs := builtinopenapi.GetOpenAPIDefinitions(ref)
	for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	if definitions.byRefStyle == nil {
		definitions.byRefStyle = map[string]map[string]common.OpenAPIDefinition{}
	}
	definitions.byRefStyle[style] = defs
	return defs
}

// refStyle tells reference callbacks apart by what they make of one name.
func refStyle(ref common.ReferenceCallback) string {
	r := ref("k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta")
	return r.String()
}
