package syncer

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// gadgetOpenAPI is an OpenAPI v3 document shaped like kube-apiserver's:
// references wrapped in allOf with defaults, IntOrString and Quantity as
// oneOf, a recursive type, maps, RawExtension, and list-map keys that rely
// on a default.
const gadgetOpenAPI = `{
  "openapi": "3.0.0",
  "components": {"schemas": {
    "io.example.v1.Gadget": {
      "type": "object",
      "x-kubernetes-group-version-kind": [{"group": "gadgets.example.io", "version": "v1", "kind": "Gadget"}],
      "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
        "spec": {"description": "the spec", "default": {}, "allOf": [{"$ref": "#/components/schemas/io.example.v1.GadgetSpec"}]},
        "status": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.example.v1.GadgetStatus"}]}
      }
    },
    "io.example.v1.GadgetSpec": {
      "type": "object",
      "required": ["name"],
      "properties": {
        "name": {"type": "string", "default": "x"},
        "port": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]},
        "memory": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
        "raw": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.runtime.RawExtension"},
        "tree": {"$ref": "#/components/schemas/io.example.v1.Tree"},
        "ports": {
          "type": "array",
          "x-kubernetes-list-type": "map",
          "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
          "items": {"default": {}, "allOf": [{"$ref": "#/components/schemas/io.example.v1.Port"}]}
        },
        "names": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
          "items": {"$ref": "#/components/schemas/io.example.v1.Named"}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "default": ""}},
        "kind": {"type": "string", "format": "unknown-format", "enum": ["A", "B"]}
      }
    },
    "io.example.v1.GadgetStatus": {"type": "object", "properties": {"observedGeneration": {"type": "integer", "format": "int64"}}},
    "io.example.v1.Port": {"type": "object", "required": ["containerPort"], "properties": {
      "containerPort": {"type": "integer", "format": "int32"}, "protocol": {"type": "string", "default": "TCP"}}},
    "io.example.v1.Named": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
    "io.example.v1.Tree": {"type": "object", "properties": {
      "children": {"type": "array", "items": {"$ref": "#/components/schemas/io.example.v1.Tree"}}}},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string",
      "oneOf": [{"type": "integer"}, {"type": "string"}]},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object"}
  }}
}`

var gadgetGVK = schema.GroupVersionKind{Group: "gadgets.example.io", Version: "v1", Kind: "Gadget"}

func TestSchemaFromOpenAPIIsAValidCRDSchema(t *testing.T) {
	props, err := schemaFromOpenAPI([]byte(gadgetOpenAPI), gadgetGVK)
	require.NoError(t, err)
	requireValidCRD(t, gadgetGVK, props)
}

func TestSchemaFromOpenAPIRewrites(t *testing.T) {
	props, err := schemaFromOpenAPI([]byte(gadgetOpenAPI), gadgetGVK)
	require.NoError(t, err)
	assert.Equal(t, apiextensionsv1.JSONSchemaProps{Type: "object"}, props.Properties["metadata"], "root metadata")
	spec := props.Properties["spec"]
	assert.Equal(t, "the spec", spec.Description, "description of the referring property wins")
	assert.Equal(t, []string{"name"}, spec.Required)
	assert.Nil(t, spec.Properties["name"].Default, "defaults are dropped")
	assert.True(t, spec.Properties["port"].XIntOrString, "IntOrString")
	assert.Empty(t, spec.Properties["port"].Type)
	assert.True(t, *spec.Properties["memory"].XPreserveUnknownFields, "Quantity keeps any value")
	assert.Equal(t, "string", spec.Properties["labels"].AdditionalProperties.Schema.Type)
	assert.True(t, *spec.Properties["raw"].XPreserveUnknownFields, "RawExtension")
	children := spec.Properties["tree"].Properties["children"]
	assert.True(t, *children.Items.Schema.XPreserveUnknownFields, "recursion is cut")
	assert.Nil(t, spec.Properties["ports"].XListType, "map keys relying on a default are dropped")
	assert.Equal(t, "map", *spec.Properties["names"].XListType)
	assert.Equal(t, []string{"name"}, spec.Properties["names"].XListMapKeys)
	assert.Equal(t, "set", *spec.Properties["tags"].XListType)
	assert.Empty(t, spec.Properties["kind"].Format, "unknown formats are dropped")
	assert.Len(t, spec.Properties["kind"].Enum, 2)
	assert.Equal(t, "int64", props.Properties["status"].Properties["observedGeneration"].Format)
}

func TestSchemaFromOpenAPIUnknownKind(t *testing.T) {
	_, err := schemaFromOpenAPI([]byte(gadgetOpenAPI), schema.GroupVersionKind{Group: "gadgets.example.io", Version: "v1", Kind: "Other"})
	assert.ErrorContains(t, err, "no schema")
}

// requireValidCRD validates a CRD with the schema as the heaven's
// apiextensions-apiserver would on create.
func requireValidCRD(t *testing.T, gvk schema.GroupVersionKind, props *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets." + gvk.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: gvk.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: gvk.Kind, ListKind: gvk.Kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: gvk.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: props},
			}},
		},
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	var internal apiextensions.CustomResourceDefinition
	require.NoError(t, apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, &internal, nil))
	errs := validation.ValidateCustomResourceDefinition(context.Background(), &internal)
	if len(errs) > 0 {
		raw, _ := json.MarshalIndent(props, "", "  ")
		t.Fatalf("invalid CRD schema: %v\n%s", errs.ToAggregate(), raw)
	}
}
