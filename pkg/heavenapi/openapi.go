package heavenapi

import (
	apiextensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/common"

	builtinopenapi "github.com/heaven-dev/heaven/pkg/generated/openapi"
)

// getDefinitions returns the OpenAPI definitions of every type a heaven
// serves: the built-in types and the apiextensions API. Each call builds a
// new map (about 3 ms): the OpenAPI builders of k8s.io/apiserver and
// apiextensions modify the schemas they are given, so heavens that start at
// the same time cannot share one.
func getDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := builtinopenapi.GetOpenAPIDefinitions(ref)
	for name, def := range apiextensionsopenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	return defs
}
