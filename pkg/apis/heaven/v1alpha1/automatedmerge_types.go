package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AutomatedMergesResource is the resource of AutomatedMerge objects.
var AutomatedMergesResource = SchemeGroupVersion.WithResource("automatedmerges")

// AutomatedMergeKind is the kind of AutomatedMerge objects.
const AutomatedMergeKind = "AutomatedMerge"

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AutomatedMerge merges the branches of source heavens into a target heaven
// with a three-way merge of objects, field by field, from their git merge
// base: each merge is one merge commit on the target's branch.
type AutomatedMerge struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              AutomatedMergeSpec   `json:"spec,omitempty"`
	Status            AutomatedMergeStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// AutomatedMergeList is a list of AutomatedMerges.
type AutomatedMergeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AutomatedMerge `json:"items"`
}

// AutomatedMergeSpec says what merges into what, when, and how conflicts
// resolve.
type AutomatedMergeSpec struct {
	// Sources are the heavens merged into the target, each on its own.
	Sources []string `json:"sources"`
	// Target is the heaven merged into.
	Target string `json:"target"`
	// Trigger says when to merge; by default on every change of a source,
	// and every minute in any case.
	Trigger MergeTrigger `json:"trigger,omitempty"`
	// Resources are the "<group or core>/<resource>" that merge
	// ("apps/deployments", "core/configmaps"); empty means every resource
	// stored in git. Ephemeral resources (events, leases) never merge.
	Resources []string `json:"resources,omitempty"`
	// ConflictPolicy resolves conflicts; by default none is resolved
	// (Manual): a merge with a conflict writes nothing and reports it.
	// Built-in rules, after the policy's own (merge.KubernetesRules): a
	// status conflict takes the source's status, managed fields keep the
	// target's, and an object deleted on one side and terminating on the
	// other is deleted.
	ConflictPolicy ConflictPolicy `json:"conflictPolicy,omitempty"`
	// Suspend stops merging until it is unset.
	Suspend bool `json:"suspend,omitempty"`
}

// MergeTrigger says when a merge runs.
type MergeTrigger struct {
	// OnChange merges as soon as a source's branch moves (default true).
	OnChange *bool `json:"onChange,omitempty"`
	// Interval merges at least this often (default 1m); with OnChange, a
	// resync that catches what a notification missed.
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// ConflictResolution says which side of a conflict wins.
type ConflictResolution string

// Conflict resolutions.
const (
	// PreferSource takes the source heaven's value.
	PreferSource ConflictResolution = "PreferSource"
	// PreferTarget keeps the target heaven's value.
	PreferTarget ConflictResolution = "PreferTarget"
	// Manual resolves nothing: the merge writes nothing and reports.
	Manual ConflictResolution = "Manual"
)

// ConflictPolicy resolves conflicts: the rule with the longest path covering
// a conflict (a rule for the object's resource before one for every
// resource), else Default.
type ConflictPolicy struct {
	// Default resolves conflicts no rule covers (default Manual).
	Default ConflictResolution `json:"default,omitempty"`
	// Rules resolve the conflicts at and below a path.
	Rules []ConflictRule `json:"rules,omitempty"`
}

// ConflictRule resolves the conflicts at and below a path.
type ConflictRule struct {
	// Resource restricts the rule to one "<group or core>/<resource>";
	// empty for every resource.
	Resource string `json:"resource,omitempty"`
	// Path is a field path prefix: ".status", ".spec.replicas",
	// ".metadata.labels", ".spec.containers[name=\"web\"]"; "." or empty
	// for the whole object (creates, edits and deletes of it).
	Path string `json:"path,omitempty"`
	// Resolution of the conflicts the rule covers.
	Resolution ConflictResolution `json:"resolution"`
}

// AutomatedMergeStatus reports the last merges.
type AutomatedMergeStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Sources report, per source heaven, its last merge.
	Sources []SourceMergeStatus `json:"sources,omitempty"`
	// ObjectsChanged is the number of objects the last merge of each source
	// changed in the target, summed.
	ObjectsChanged int32 `json:"objectsChanged,omitempty"`
	// ConflictCount is the number of conflicts of the last merge of each
	// source, summed; Conflicts may list fewer.
	ConflictCount int32 `json:"conflictCount,omitempty"`
	// Conflicts of the last merge of each source, resolved or not, at most
	// MaxReportedConflicts; every one is also an Event.
	Conflicts []MergeConflict `json:"conflicts,omitempty"`
	// Conditions: Ready (the last merge of every source went through) and
	// Conflicted (the last merges had conflicts; reason Blocked when a
	// Manual one kept a merge from being written).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// SourceMergeStatus is the last merge of one source into the target.
type SourceMergeStatus struct {
	// Heaven is the source heaven.
	Heaven string `json:"heaven"`
	// SourceCommit is the source's commit last merged into the target.
	SourceCommit string `json:"sourceCommit,omitempty"`
	// TargetCommit is the merge commit written for it on the target's
	// branch (its second parent is SourceCommit).
	TargetCommit string `json:"targetCommit,omitempty"`
	// Revision is the target's revision of that merge.
	Revision int64 `json:"revision,omitempty"`
	// LastMergeTime is when it was written.
	LastMergeTime *metav1.Time `json:"lastMergeTime,omitempty"`
	// ObjectsChanged is how many objects of the target it changed.
	ObjectsChanged int32 `json:"objectsChanged,omitempty"`
	// Conflicts is how many conflicts the last merge attempt found.
	Conflicts int32 `json:"conflicts,omitempty"`
	// Blocked: the last attempt had a Manual conflict and wrote nothing;
	// BlockedCommit is the source commit it could not merge.
	Blocked       bool   `json:"blocked,omitempty"`
	BlockedCommit string `json:"blockedCommit,omitempty"`
	// Message says why the last attempt failed, if it did.
	Message string `json:"message,omitempty"`
}

// MergeConflict is one value both sides changed differently, or an edit
// against a delete.
type MergeConflict struct {
	// Heaven is the source heaven of the merge.
	Heaven string `json:"heaven"`
	// Object is the object's key, "<group or core>/<resource>/[<namespace>/]<name>".
	Object string `json:"object"`
	// Path is the field ("" for the object itself: an edit against a delete).
	Path string `json:"path,omitempty"`
	// Base, Target and Source are the values (compact JSON, truncated to
	// MaxConflictValueLength bytes); unset where absent.
	Base   *string `json:"base,omitempty"`
	Target *string `json:"target,omitempty"`
	Source *string `json:"source,omitempty"`
	// Resolution is how it was resolved; Manual means it was not, and the
	// merge was not written.
	Resolution ConflictResolution `json:"resolution"`
}

// Limits of what status reports.
const (
	MaxReportedConflicts   = 50
	MaxConflictValueLength = 256
)

// Condition types and reasons of an AutomatedMerge.
const (
	ConditionReady      = "Ready"
	ConditionConflicted = "Conflicted"
	// ConditionAuthorized says whether the user the merge acts for (the
	// requester, annotation heaven.dev/requester) holds the rights it
	// exercises: reading its sources, writing its target.
	ConditionAuthorized = "Authorized"

	ReasonMerged       = "Merged"
	ReasonSuspended    = "Suspended"
	ReasonInvalid      = "InvalidSpec"
	ReasonFailed       = "MergeFailed"
	ReasonBlocked      = "Blocked"
	ReasonResolved     = "ResolvedByPolicy"
	ReasonNoConflicts  = "NoConflicts"
	ReasonAuthorized   = "RequesterAuthorized"
	ReasonUnauthorized = "RequesterUnauthorized"
)
