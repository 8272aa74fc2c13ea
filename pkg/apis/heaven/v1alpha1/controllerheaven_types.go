package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerHeavensResource is the resource of ControllerHeaven objects.
var ControllerHeavensResource = SchemeGroupVersion.WithResource("controllerheavens")

// ControllerHeavenKind is the kind of ControllerHeaven objects.
const ControllerHeavenKind = "ControllerHeaven"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ControllerHeaven runs a controller in a heaven of its own: a fork of the
// heaven it works for, merged with it both ways (users' specs in, the
// controller's statuses out), and the controller's Deployment in the
// physical cluster of a SyncTarget, with a kubeconfig for its heaven only.
// The controller's world is its heaven: it goes on working when the other
// heaven or the merges are away. ControllerHeavens live in the root heaven
// (cluster-scoped); heaven-server's cluster controller acts on them as the
// user who created them.
type ControllerHeaven struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ControllerHeavenSpec   `json:"spec,omitempty"`
	Status            ControllerHeavenStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ControllerHeavenList is a list of ControllerHeavens.
type ControllerHeavenList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControllerHeaven `json:"items"`
}

// ControllerHeavenSpec says which heaven the controller works for, what
// merges, and what runs where.
type ControllerHeavenSpec struct {
	// Fork is the heaven the controller works for: its own heaven starts
	// as a fork of it and is merged with it both ways. Immutable.
	Fork string `json:"fork"`
	// Heaven is the controller's own heaven; default: the
	// ControllerHeaven's name. Immutable.
	Heaven string `json:"heaven,omitempty"`
	// Resources merged between the two heavens, as
	// AutomatedMerge.spec.resources ("apps/deployments"); empty: every
	// resource stored in git.
	Resources []string `json:"resources,omitempty"`
	// SyncTarget is the physical cluster the controller runs in: the
	// Deployment is installed with the kubeconfig of its
	// spec.kubeconfigSecretRef.
	SyncTarget string `json:"syncTarget"`
	// Replicas of the controller's Deployment (default 1).
	Replicas *int32 `json:"replicas,omitempty"`
	// Template is the controller's pod template. Each container gets the
	// environment variable KUBECONFIG naming a kubeconfig for the
	// controller's heaven (ControllerKubeconfigPath, from a Secret).
	Template corev1.PodTemplateSpec `json:"template"`
}

// ControllerHeavenStatus reports what is in place.
type ControllerHeavenStatus struct {
	// ObservedGeneration is the generation the conditions are about.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Heaven is the controller's heaven.
	Heaven string `json:"heaven,omitempty"`
	// Namespace is where the controller runs in the physical cluster.
	Namespace string `json:"namespace,omitempty"`
	// Conditions: Ready (the heaven, both merges and the Deployment are in
	// place).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ControllerKubeconfigPath is where a controller's containers find the
// kubeconfig of its heaven (also in $KUBECONFIG).
const ControllerKubeconfigPath = "/etc/heaven/kubeconfig"

// ControllerHeavenLabel marks what heaven-server installs for a
// ControllerHeaven in a physical cluster; the value is its name.
const ControllerHeavenLabel = "heaven.dev/controller-heaven"

// ControllerHeavenFinalizer holds a ControllerHeaven until what was
// installed for it is removed.
const ControllerHeavenFinalizer = "heaven.dev/controller-heaven"

// HeavenName is the controller's heaven.
func (s *ControllerHeavenSpec) HeavenName(name string) string {
	if s.Heaven != "" {
		return s.Heaven
	}
	return name
}

// ControllerUser is the user a ControllerHeaven's controller is in its
// heaven (an owner of it: cluster-admin there, nothing elsewhere).
func ControllerUser(name string) string { return "heaven:controller:" + name }

// ControllerGroup is the group of every ControllerHeaven's controller.
const ControllerGroup = "heaven:controllers"

// MergeInName and MergeOutName are the AutomatedMerges of a
// ControllerHeaven: from the heaven it works for into its own, and back.
func MergeInName(name string) string  { return name + "-in" }
func MergeOutName(name string) string { return name + "-out" }
