package v1alpha1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// SyncTargetsResource is the resource of SyncTarget objects.
var SyncTargetsResource = SchemeGroupVersion.WithResource("synctargets")

// SyncTargetKind is the kind of SyncTarget objects.
const SyncTargetKind = "SyncTarget"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SyncTarget is a physical cluster that a heaven drives. SyncTargets live in
// the root heaven (cluster-scoped), where heaven-server's cluster controller
// watches them; spec.heaven names the heaven whose objects are synced. A
// syncer running with the target's name copies every object of that heaven
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

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SyncTargetList is a list of SyncTargets.
type SyncTargetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SyncTarget `json:"items"`
}

// SyncTargetSpec says which heaven is synced, how to reach the physical
// cluster and what to sync.
type SyncTargetSpec struct {
	// Heaven whose objects are synced. Immutable.
	Heaven string `json:"heaven"`
	// KubeconfigSecretRef names the Secret (in the root heaven) holding a
	// kubeconfig for the physical cluster, with which the cluster
	// controller installs the syncer there. Without it nothing is
	// installed (install by hand: heaven-server syncer-manifests) and the
	// controller only watches the syncer's heartbeat.
	KubeconfigSecretRef *SecretKeyReference `json:"kubeconfigSecretRef,omitempty"`
	// Resources to sync, each "resource.group" ("deployments.apps"), core
	// resources without a group ("configmaps"). A syncer syncs these and
	// the resources of its --resources flag.
	Resources []string `json:"resources,omitempty"`
	// HeartbeatInterval is how often the syncer heartbeats (its
	// --heartbeat-interval when unset, 20s by default). The target is not
	// Ready once no heartbeat came for 3 intervals.
	HeartbeatInterval *metav1.Duration `json:"heartbeatInterval,omitempty"`
}

// DefaultHeartbeatInterval is the syncer's heartbeat interval unless
// spec.heartbeatInterval or its flag says otherwise.
const DefaultHeartbeatInterval = 20 * time.Second

// HeartbeatStaleAfter is how many heartbeat intervals without a heartbeat
// make a target not Ready.
const HeartbeatStaleAfter = 3

// HeartbeatIntervalOr is spec.heartbeatInterval if set and positive, else def.
func (s *SyncTargetSpec) HeartbeatIntervalOr(def time.Duration) time.Duration {
	if s.HeartbeatInterval != nil && s.HeartbeatInterval.Duration > 0 {
		return s.HeartbeatInterval.Duration
	}
	return def
}

// SecretKeyReference names a key of a Secret (in the root heaven).
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
	// Conditions: Ready and Installed (the cluster controller),
	// SyncerHeartbeat, ClusterReachable and ResourcesSynced (the syncer;
	// the controller sets SyncerHeartbeat False when heartbeats stop).
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
	// SyncTargetReady (cluster controller): the target is usable — its
	// syncer's heartbeat is fresh (reason HeartbeatStale when it is not)
	// and the syncer reaches the physical cluster.
	SyncTargetReady = "Ready"
	// SyncTargetInstalled (cluster controller): the syncer is installed in
	// the physical cluster (reason NotManaged without
	// spec.kubeconfigSecretRef).
	SyncTargetInstalled = "Installed"
	// SyncTargetSyncerHeartbeat: the syncer's heartbeat is recent.
	SyncTargetSyncerHeartbeat = "SyncerHeartbeat"
	// SyncTargetClusterReachable (syncer): the syncer reaches the
	// physical cluster.
	SyncTargetClusterReachable = "ClusterReachable"
	// SyncTargetResourcesSynced: every requested resource is Synced.
	SyncTargetResourcesSynced = "ResourcesSynced"
	// SyncTargetAuthorized (cluster controller): the user the SyncTarget
	// acts for (annotation heaven.dev/requester) may still have its heaven
	// synced; while not (reason RequesterUnauthorized), its syncer is
	// refused.
	SyncTargetAuthorized = "Authorized"
)

// ClusterLabel on an object in a heaven names the SyncTarget it is synced to.
const ClusterLabel = "heaven.dev/cluster"

// SyncTargetFinalizer keeps a SyncTarget until the cluster controller has
// uninstalled its syncer and released the heaven's objects.
const SyncTargetFinalizer = "heaven.dev/sync-target"

// SyncerFinalizer is the finalizer the syncer of target puts on the objects
// it syncs, so that their copies in the physical cluster are deleted before
// they are.
func SyncerFinalizer(target string) string { return "heaven.dev/syncer-" + target }

// Owner labels: the syncer of (heaven, target) puts both on every object
// and namespace it creates in the physical cluster, and only ever touches
// what carries both.
const (
	// HeavenLabel names the heaven an object or namespace was synced from.
	HeavenLabel = "heaven.dev/heaven"
	// SyncTargetLabel names the SyncTarget whose syncer created it.
	SyncTargetLabel = "heaven.dev/sync-target"
)

// ValidateResource checks an entry of spec.resources (or of the syncer's
// --resources): "resource.group", core resources without a group.
func ValidateResource(r string) error {
	gr := schema.ParseGroupResource(r)
	if gr.Resource == "" {
		return fmt.Errorf("%q names no resource", r)
	}
	if msgs := validation.IsDNS1123Label(gr.Resource); len(msgs) > 0 {
		return fmt.Errorf("%q: resource %v", r, msgs)
	}
	if gr.Group != "" {
		if msgs := validation.IsDNS1123Subdomain(gr.Group); len(msgs) > 0 {
			return fmt.Errorf("%q: group %v", r, msgs)
		}
	}
	return nil
}
