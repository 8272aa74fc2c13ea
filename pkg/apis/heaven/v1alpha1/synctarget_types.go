package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncTargetsResource is the resource of SyncTarget objects.
var SyncTargetsResource = SchemeGroupVersion.WithResource("synctargets")

// SyncTarget is a physical cluster that a heaven drives. It lives in the
// heaven whose objects are synced (so the kubeconfig Secret it names is in
// the same heaven, and a syncer's credential needs no access beyond that
// heaven). A syncer running with the target's name copies every object
// labelled ClusterLabel=<name> down to the cluster and the cluster's status
// back up, and reports its heartbeat and what it syncs here.
//
// Names are DNS labels of at most 56 characters: the name is part of the
// syncer's finalizer (SyncerFinalizer) and of label values.
type SyncTarget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SyncTargetSpec   `json:"spec,omitempty"`
	Status            SyncTargetStatus `json:"status,omitempty"`
}

// SyncTargetSpec says how to reach the physical cluster and what to sync.
type SyncTargetSpec struct {
	// KubeconfigSecretRef names the Secret (in the same heaven) holding a
	// kubeconfig for the physical cluster.
	KubeconfigSecretRef SecretKeyReference `json:"kubeconfigSecretRef"`
	// Resources to sync, each "resource.group" ("deployments.apps"), core
	// resources without a group ("configmaps"). A syncer syncs these and
	// the resources of its --resources flag.
	Resources []string `json:"resources,omitempty"`
}

// SecretKeyReference names a key of a Secret.
type SecretKeyReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Key within the Secret's data; "kubeconfig" when empty.
	Key string `json:"key,omitempty"`
}

// DefaultKubeconfigKey is the Secret key read when SecretKeyReference.Key is empty.
const DefaultKubeconfigKey = "kubeconfig"

// SyncTargetStatus is what the syncer (and the cluster controller) observed.
type SyncTargetStatus struct {
	// LastSyncerHeartbeatTime is when the syncer last reported that it runs.
	LastSyncerHeartbeatTime *metav1.Time `json:"lastSyncerHeartbeatTime,omitempty"`
	// Conditions: Ready, SyncerHeartbeat, ResourcesSynced.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Resources is the state of every requested resource, by Resource.
	Resources []ResourceSyncStatus `json:"resources,omitempty"`
}

// ResourceSyncStatus is the state of one requested resource.
type ResourceSyncStatus struct {
	// Resource as requested: "resource.group".
	Resource string `json:"resource"`
	// Version synced, the physical cluster's preferred version.
	Version string `json:"version,omitempty"`
	// Kind of the resource's objects.
	Kind string `json:"kind,omitempty"`
	// State is Synced, Pending or NotSynced.
	State ResourceSyncState `json:"state"`
	// Source says where the heaven's definition of the type comes from.
	Source TypeSource `json:"source,omitempty"`
	// Reason is a CamelCase word saying why the state is not Synced.
	Reason string `json:"reason,omitempty"`
	// Message explains the state for people.
	Message string `json:"message,omitempty"`
	// ObjectsSynced is how many objects of the resource the syncer owns in
	// the physical cluster.
	ObjectsSynced int64 `json:"objectsSynced,omitempty"`
	// ObjectsFailed is how many objects of the resource failed to sync at
	// their last attempt (each is retried with backoff and has a Warning
	// event in the heaven).
	ObjectsFailed int64 `json:"objectsFailed,omitempty"`
}

// ResourceSyncState is the state of a requested resource.
type ResourceSyncState string

// Resource states.
const (
	// ResourceSynced: objects of the resource are being synced.
	ResourceSynced ResourceSyncState = "Synced"
	// ResourcePending: the type is being taught to the heaven.
	ResourcePending ResourceSyncState = "Pending"
	// ResourceNotSynced: the resource cannot be synced (Reason, Message);
	// the syncer retries and the other resources are synced meanwhile.
	ResourceNotSynced ResourceSyncState = "NotSynced"
)

// TypeSource says where a heaven's definition of a synced type comes from.
type TypeSource string

// Type sources.
const (
	// TypeSourceHeaven: the heaven already served the type (built in, or a
	// CRD someone else installed).
	TypeSourceHeaven TypeSource = "Heaven"
	// TypeSourceCRD: the physical cluster's CRD, copied into the heaven.
	TypeSourceCRD TypeSource = "CRD"
	// TypeSourceOpenAPI: a CRD built from the physical cluster's OpenAPI v3
	// schema of a built-in type.
	TypeSourceOpenAPI TypeSource = "OpenAPI"
)

// SyncTarget condition types.
const (
	// SyncTargetReady: the target is usable — its syncer heartbeats and
	// reaches both sides.
	SyncTargetReady = "Ready"
	// SyncTargetSyncerHeartbeat: the syncer's heartbeat is recent.
	SyncTargetSyncerHeartbeat = "SyncerHeartbeat"
	// SyncTargetResourcesSynced: every requested resource is Synced.
	SyncTargetResourcesSynced = "ResourcesSynced"
)

// ClusterLabel on an object in a heaven names the SyncTarget it is synced to.
const ClusterLabel = "heaven.dev/cluster"

// SyncerFinalizer is the finalizer the syncer of target puts on the objects
// it syncs, so that their copies in the physical cluster are deleted before
// they are.
func SyncerFinalizer(target string) string { return "heaven.dev/syncer-" + target }
