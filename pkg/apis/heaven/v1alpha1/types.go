// Package v1alpha1 is the heaven.dev/v1alpha1 API: the objects through which
// heaven-server is configured, served as CRDs (config/crds) in the root
// heaven. Controllers read and write them as unstructured objects and
// convert with runtime.DefaultUnstructuredConverter.
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of Heaven's own types.
const GroupName = "heaven.dev"

// SchemeGroupVersion is heaven.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// HeavensResource is the resource of Heaven objects.
var HeavensResource = SchemeGroupVersion.WithResource("heavens")

// Heaven is a logical cluster: a Kubernetes API at /clusters/<name> whose
// objects live on the git branch <name>.
type Heaven struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HeavenSpec   `json:"spec,omitempty"`
	Status            HeavenStatus `json:"status,omitempty"`
}

// HeavenSpec says where a heaven's data comes from and what happens to it
// when the Heaven is deleted.
type HeavenSpec struct {
	// Fork starts the heaven as a copy of another heaven at a revision.
	// Only read when the heaven's branch does not exist yet.
	Fork *Fork `json:"fork,omitempty"`
	// DeletePolicy is Retain (default: the branch stays in git after the
	// Heaven is deleted) or Delete (the branch is deleted too).
	DeletePolicy DeletePolicy `json:"deletePolicy,omitempty"`
}

// Fork names the heaven and revision a new heaven starts from.
type Fork struct {
	// Heaven to fork.
	Heaven string `json:"heaven"`
	// Revision of that heaven; 0 or unset is its current revision.
	Revision int64 `json:"revision,omitempty"`
}

// DeletePolicy says what deleting a Heaven does to its branch.
type DeletePolicy string

// Delete policies.
const (
	DeletePolicyRetain DeletePolicy = "Retain"
	DeletePolicyDelete DeletePolicy = "Delete"
)

// HeavenStatus is what heaven-server observed of the heaven.
type HeavenStatus struct {
	Phase HeavenPhase `json:"phase,omitempty"`
	// Branch is the git branch holding the heaven's objects.
	Branch string `json:"branch,omitempty"`
	// Head is the branch's commit when last observed.
	Head string `json:"head,omitempty"`
	// Revision is the heaven's revision when last observed.
	Revision int64 `json:"revision,omitempty"`
	// ForkedFrom records the commit a fork started at.
	ForkedFrom *ForkedFrom `json:"forkedFrom,omitempty"`
	// Message explains a Failed phase.
	Message    string             `json:"message,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ForkedFrom is where a fork started.
type ForkedFrom struct {
	Heaven   string `json:"heaven"`
	Commit   string `json:"commit"`
	Revision int64  `json:"revision"`
}

// HeavenPhase is the lifecycle phase of a heaven.
type HeavenPhase string

// Phases.
const (
	HeavenPhaseReady       HeavenPhase = "Ready"
	HeavenPhaseFailed      HeavenPhase = "Failed"
	HeavenPhaseTerminating HeavenPhase = "Terminating"
)

// HeavenFinalizer keeps a Heaven until heaven-server stopped serving it
// (and deleted its branch if asked).
const HeavenFinalizer = "heaven.dev/heaven"
