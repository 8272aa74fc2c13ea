// Package widgetcontroller is a small controller written the way Kubernetes
// controllers are (client-go's dynamic informer, a rate-limited workqueue, a
// level-based reconcile): it reports each Widget's spec.size in its status.
// The e2e tests run it against a heaven of its own, its workspace, and let
// AutomatedMerges carry its status to the heaven users edit.
package widgetcontroller

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// Name is the controller's name: its user agent and field manager.
const Name = "widget-controller"

// Resource is widgets.example.com, the resource the controller reconciles.
var Resource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// PhaseReady is the phase of a Widget whose size the controller observed.
const PhaseReady = "Ready"

// Status is what the controller reports of a Widget.
type Status struct {
	ObservedSize       int64
	Phase              string
	ObservedGeneration int64
}

// Size is a Widget's spec.size (0 when unset).
func Size(w *unstructured.Unstructured) int64 {
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	return size
}

// StatusOf is a Widget's status as the controller reports it (zero values
// where fields are unset).
func StatusOf(w *unstructured.Unstructured) Status {
	var s Status
	s.ObservedSize, _, _ = unstructured.NestedInt64(w.Object, "status", "observedSize")
	s.Phase, _, _ = unstructured.NestedString(w.Object, "status", "phase")
	s.ObservedGeneration, _, _ = unstructured.NestedInt64(w.Object, "status", "observedGeneration")
	return s
}

// Desired is the status the controller reports for a Widget as it is.
func Desired(w *unstructured.Unstructured) Status {
	return Status{ObservedSize: Size(w), Phase: PhaseReady, ObservedGeneration: w.GetGeneration()}
}

// setStatus sets the controller's fields of w's status, keeping any other.
func setStatus(w *unstructured.Unstructured, s Status) error {
	for field, v := range map[string]any{"observedSize": s.ObservedSize, "phase": s.Phase, "observedGeneration": s.ObservedGeneration} {
		if err := unstructured.SetNestedField(w.Object, v, "status", field); err != nil {
			return err
		}
	}
	return nil
}

// CRD is the CustomResourceDefinition of Widgets, with a status
// subresource.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: Resource.GroupResource().String()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: Resource.Group,
			Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: Resource.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "integer", Format: "int64", Minimum: ptr.To[float64](0)},
						}},
						"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"observedSize":       {Type: "integer", Format: "int64"},
							"phase":              {Type: "string"},
							"observedGeneration": {Type: "integer", Format: "int64"},
						}},
					},
				}},
			}},
		},
	}
}
