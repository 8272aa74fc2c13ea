package scheme

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// extraFieldLabels are the field selectors each kind supports beyond
// metadata.name and metadata.namespace; the registries' GetAttrs fill them.
var extraFieldLabels = map[schema.GroupVersionKind][]string{
	corev1.SchemeGroupVersion.WithKind("Namespace"): {"status.phase"},
	corev1.SchemeGroupVersion.WithKind("Secret"):    {"type"},
	corev1.SchemeGroupVersion.WithKind("Event"): {
		"involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
		"involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
		"involvedObject.fieldPath", "reason", "reportingComponent", "source", "type",
	},
	eventsv1.SchemeGroupVersion.WithKind("Event"): {
		"regarding.kind", "regarding.namespace", "regarding.name", "regarding.uid",
		"regarding.apiVersion", "regarding.resourceVersion", "regarding.fieldPath",
		"reason", "reportingController", "type",
	},
}

// addFieldLabelConversions accepts each kind's extra field labels unchanged;
// a kind without an entry gets the scheme's metadata-only default.
func addFieldLabelConversions(s *runtime.Scheme) error {
	for gvk, extra := range extraFieldLabels {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, l := range extra {
			allowed[l] = true
		}
		err := s.AddFieldLabelConversionFunc(gvk, func(label, value string) (string, string, error) {
			if !allowed[label] {
				return "", "", fmt.Errorf("field label not supported: %s", label)
			}
			return label, value, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
