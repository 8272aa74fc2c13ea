package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Heaven's own types.
const GroupName = "heaven.dev"

// SchemeGroupVersion is heaven.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is resource of heaven.dev, qualified by the group (the
// generated listers' NotFound errors name it).
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder registers the types of heaven.dev/v1alpha1.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme adds the types of heaven.dev/v1alpha1 to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&Heaven{}, &HeavenList{},
		&AutomatedMerge{}, &AutomatedMergeList{},
		&SyncTarget{}, &SyncTargetList{},
		&ControllerHeaven{}, &ControllerHeavenList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
