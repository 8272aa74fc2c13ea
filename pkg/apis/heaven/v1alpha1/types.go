package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HeavensResource is the resource of Heaven objects.
var HeavensResource = SchemeGroupVersion.WithResource("heavens")

// HeavenKind is the kind of Heaven objects.
const HeavenKind = "Heaven"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Heaven is a logical cluster: a Kubernetes API at /clusters/<name> whose
// objects live on the git branch <name>.
type Heaven struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              HeavenSpec   `json:"spec,omitempty"`
	Status            HeavenStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// HeavenList is a list of Heavens.
type HeavenList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Heaven `json:"items"`
}

// HeavenSpec says where a heaven's data comes from and what happens to it
// when the Heaven is deleted.
type HeavenSpec struct {
	// Type is the API the heaven serves: generic (default) or kubernetes.
	// It can't change once the Heaven exists.
	Type HeavenType `json:"type,omitempty"`
	// Fork starts the heaven as a copy of another heaven at a revision.
	// Only read when the heaven's branch does not exist yet.
	Fork *Fork `json:"fork,omitempty"`
	// DeletePolicy is Retain (default: the branch stays in git after the
	// Heaven is deleted) or Delete (the branch is deleted too).
	DeletePolicy DeletePolicy `json:"deletePolicy,omitempty"`
	// Remote makes the heaven track a branch of a git remote: heaven-server
	// fetches it and merges it into the heaven (field by field, as an
	// AutomatedMerge does), and pushes the heaven's branch back to it,
	// continuously. A heaven whose branch does not exist yet starts as a
	// clone of the remote branch, if there is one.
	Remote *Remote `json:"remote,omitempty"`
	// Owners are users who are cluster-admin of the heaven, besides the
	// user who created the Heaven (see CreatedByAnnotation): heaven-server
	// keeps the heaven's ClusterRoleBinding heaven:owners naming them.
	Owners []string `json:"owners,omitempty"`
}

// CreatedByAnnotation records the user who created a Heaven. heaven-server
// sets it when the Heaven is created and keeps it from changing; that user
// is an owner of the heaven.
const CreatedByAnnotation = "heaven.dev/created-by"

// OwnersBinding is the ClusterRoleBinding in each heaven that binds
// cluster-admin to its owners.
const OwnersBinding = "heaven:owners"

// Remote is the branch of a git remote that a heaven tracks.
type Remote struct {
	// URL of the remote repository: git://, http://, https://, ssh://,
	// file:// or a local path.
	URL string `json:"url"`
	// Branch of the remote; default: the heaven's name.
	Branch string `json:"branch,omitempty"`
	// Interval between fetches (default 10s). Changes of the heaven are
	// pushed as they happen.
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Push the heaven's branch to the remote (default true); false only
	// fetches and merges.
	Push *bool `json:"push,omitempty"`
	// ConflictPolicy resolves conflicts between the remote's changes and
	// the heaven's. Default: PreferSource, the remote's value (published
	// first) wins; the heaven's stays in the merge commit's first parent.
	ConflictPolicy *ConflictPolicy `json:"conflictPolicy,omitempty"`
}

// Fork names the heaven and revision a new heaven starts from.
type Fork struct {
	// Heaven to fork.
	Heaven string `json:"heaven"`
	// Revision of that heaven; 0 or unset is its current revision.
	Revision int64 `json:"revision,omitempty"`
}

// HeavenType is the API a heaven serves.
type HeavenType string

const (
	// HeavenTypeGeneric serves what kcp's generic control plane serves
	// (namespaces, config maps, secrets, service accounts, RBAC, admission
	// policies and webhooks, certificates, leases, events, CRDs) and
	// Deployments.
	HeavenTypeGeneric HeavenType = "generic"
	// HeavenTypeKubernetes serves kube-apiserver's whole built-in API (pods,
	// services with their IP and port allocators, nodes, jobs, ...), so that
	// kube-controller-manager and kube-scheduler run against the heaven.
	HeavenTypeKubernetes HeavenType = "kubernetes"
)

// TypeOf returns the heaven type h serves (generic when unset).
func TypeOf(h *Heaven) HeavenType {
	if h == nil || h.Spec.Type == "" {
		return HeavenTypeGeneric
	}
	return h.Spec.Type
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
	// Remote reports the git remote of spec.remote: the last fetch, merge
	// and push. Its condition is RemoteSynced.
	Remote *RemoteStatus `json:"remote,omitempty"`
	// Owners are the users the heaven's ClusterRoleBinding heaven:owners
	// binds to cluster-admin, as last written.
	Owners []string `json:"owners,omitempty"`
}

// RemoteStatus is what heaven-server last did with a heaven's git remote.
type RemoteStatus struct {
	// URL and Branch are the remote branch reported on.
	URL    string `json:"url,omitempty"`
	Branch string `json:"branch,omitempty"`
	// RemoteCommit is the remote branch's commit at the last fetch; empty
	// while the remote has no such branch.
	RemoteCommit string `json:"remoteCommit,omitempty"`
	// LastFetchTime is when the remote was last fetched from.
	LastFetchTime *metav1.Time `json:"lastFetchTime,omitempty"`
	// MergedCommit is the last remote commit merged into the heaven, and
	// MergeCommit the merge commit that did it on the heaven's branch.
	MergedCommit  string       `json:"mergedCommit,omitempty"`
	MergeCommit   string       `json:"mergeCommit,omitempty"`
	LastMergeTime *metav1.Time `json:"lastMergeTime,omitempty"`
	// ObjectsChanged is how many objects the last merge changed.
	ObjectsChanged int32 `json:"objectsChanged,omitempty"`
	// ConflictCount is the number of conflicts of the last merge;
	// Conflicts lists at most MaxReportedConflicts of them (each is also
	// an Event).
	ConflictCount int32           `json:"conflictCount,omitempty"`
	Conflicts     []MergeConflict `json:"conflicts,omitempty"`
	// PushedCommit is the heaven's commit last pushed, at LastPushTime.
	PushedCommit string       `json:"pushedCommit,omitempty"`
	LastPushTime *metav1.Time `json:"lastPushTime,omitempty"`
	// Failures counts the attempts in a row that failed (the remote
	// unreachable, a push rejected); retries back off as it grows.
	Failures int32 `json:"failures,omitempty"`
	// Message says why the last attempt failed, if it did.
	Message string `json:"message,omitempty"`
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

// The condition of a heaven's git remote, and its reasons.
const (
	// ConditionRemoteSynced is True when the last exchange with the remote
	// went through: fetched, merged, and pushed what the remote lacked.
	ConditionRemoteSynced = "RemoteSynced"

	ReasonRemoteSynced      = "Synced"
	ReasonRemoteUnreachable = "RemoteUnreachable"
	ReasonRemoteRejected    = "PushRejected"
	ReasonRemoteBlocked     = "MergeBlocked"
	ReasonRemoteInvalid     = "InvalidRemote"
	ReasonRemoteSyncFailed  = "SyncFailed"
	ReasonRemoteWaiting     = "Waiting"
	// ReasonRemoteUnauthorized: the user the remote acts for (annotation
	// heaven.dev/requester) no longer holds every right in the heaven.
	ReasonRemoteUnauthorized = "RequesterUnauthorized"
)

// The condition of the files people commit to a heaven's branch, and its
// reasons.
const (
	// ConditionOutsideCommitsHealthy is False while files committed from
	// outside (a git push, git update-ref) are not served because they are
	// not objects the heaven can read; their objects keep their last good
	// version. Unknown while the branch has not been read since
	// heaven-server started.
	ConditionOutsideCommitsHealthy = "OutsideCommitsHealthy"

	ReasonAllFilesServed = "AllFilesServed"
	ReasonFilesNotServed = "FilesNotServed"
)

// HeavenFinalizer keeps a Heaven until heaven-server stopped serving it
// (and deleted its branch if asked).
const HeavenFinalizer = "heaven.dev/heaven"
