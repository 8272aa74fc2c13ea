package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of a heaven's history.
const GroupName = "history.heaven.dev"

// SchemeGroupVersion is the group version of these types.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

var schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme registers the types.
var AddToScheme = schemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Commit{}, &CommitList{}, &Diff{}, &Revert{}, &Restore{}, &Merge{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// PathField selects the commits that changed an object path or a path
// prefix ("core/configmaps/default/web", "apps/deployments/"), as a field
// selector of commits: path=<prefix>.
const PathField = "path"

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Commit is one commit of the heaven's branch, named by its hash. Its
// creation timestamp is the time it was committed.
type Commit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Revision is the heaven's resource version once the commit applied.
	Revision int64 `json:"revision"`
	// Author wrote the change: the Kubernetes user whose request it holds,
	// or whoever committed from outside.
	Author Signature `json:"author"`
	// Message is the commit message.
	Message string `json:"message,omitempty"`
	// Parents are the hashes of the commit's parents (two for a merge).
	Parents []string `json:"parents,omitempty"`
	// Changes are the objects the commit changed.
	Changes []Change `json:"changes,omitempty"`
}

// Signature is who made a commit, and when.
type Signature struct {
	Name  string      `json:"name"`
	Email string      `json:"email,omitempty"`
	Time  metav1.Time `json:"time"`
}

// Change is one object a commit changed.
type Change struct {
	// Path is the object's path: <group or core>/<resource>[/<namespace>]/<name>.
	Path string `json:"path"`
	// Deleted: the commit deleted the object; else it created or updated it.
	Deleted bool `json:"deleted,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CommitList is the history of the heaven's branch, newest first.
type CommitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Commit `json:"items"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Diff compares the objects of two points of history: revisions of this
// heaven or of another one the user may read. Created, it comes back with
// its status; nothing is stored.
type Diff struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              DiffSpec   `json:"spec"`
	Status            DiffStatus `json:"status,omitempty"`
}

// DiffSpec names what to compare.
type DiffSpec struct {
	// From and To are the two sides; an empty heaven is this one, revision
	// 0 its current state.
	From Point `json:"from"`
	To   Point `json:"to"`
	// PathPrefix limits the comparison to objects under a path
	// ("apps/deployments/", "core/configmaps/default/web").
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// Point is a heaven at a revision.
type Point struct {
	Heaven   string `json:"heaven,omitempty"`
	Revision int64  `json:"revision,omitempty"`
}

// DiffStatus is the comparison.
type DiffStatus struct {
	// From and To are the commits compared, with their revisions.
	FromCommit string `json:"fromCommit,omitempty"`
	ToCommit   string `json:"toCommit,omitempty"`
	// Objects differ between the two, sorted by path.
	Objects []ObjectDiff `json:"objects,omitempty"`
}

// ObjectDiff is one object that differs.
type ObjectDiff struct {
	Path string `json:"path"`
	// Change is Added (only in To), Removed (only in From) or Modified.
	Change ChangeType `json:"change"`
	// From and To are the object on each side, as stored.
	From *runtime.RawExtension `json:"from,omitempty"`
	To   *runtime.RawExtension `json:"to,omitempty"`
}

// ChangeType says how an object differs.
type ChangeType string

// How an object differs.
const (
	Added    ChangeType = "Added"
	Removed  ChangeType = "Removed"
	Modified ChangeType = "Modified"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Revert undoes a commit of this heaven with a new commit that puts every
// object it changed back as it was before it. It is refused (409) when one
// of them has changed since, and (403) when the user may not write one of
// them. Created, it comes back with its status; nothing is stored.
type Revert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RevertSpec `json:"spec"`
	Status            UndoStatus `json:"status,omitempty"`
}

// RevertSpec names the commit to undo.
type RevertSpec struct {
	// Commit is the commit's hash (or a unique prefix of at least 7).
	Commit string `json:"commit,omitempty"`
	// Revision is the revision the commit made, when Commit is empty.
	Revision int64 `json:"revision,omitempty"`
}

// UndoStatus says what the undo wrote.
type UndoStatus struct {
	// Commit and Revision of the new commit (empty when nothing needed to
	// change).
	Commit   string `json:"commit,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	// Changes are the objects it changed.
	Changes []Change `json:"changes,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Restore puts one object back as it was at a revision (deleting it if it
// did not exist then), with a new commit.
type Restore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              RestoreSpec `json:"spec"`
	Status            UndoStatus  `json:"status,omitempty"`
}

// RestoreSpec names the object and the revision.
type RestoreSpec struct {
	// Path is the object's path: <group or core>/<resource>[/<namespace>]/<name>.
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Merge merges another heaven's current state into this heaven once, as an
// AutomatedMerge does on every change: a three-way merge of objects from
// the two branches' merge base, field by field, written as one merge
// commit of the requesting user, who must be able to read the source's
// history and write every object the merge changes. Created with dry run
// (kubectl create --dry-run=server), it only says what it would change
// and which conflicts it meets. Nothing is stored.
type Merge struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MergeSpec   `json:"spec"`
	Status            MergeStatus `json:"status,omitempty"`
}

// MergeSpec says what to merge and how conflicts resolve.
type MergeSpec struct {
	// Source is the heaven merged in.
	Source string `json:"source"`
	// Resources are the "<group or core>/<resource>" that merge; empty: all.
	Resources []string `json:"resources,omitempty"`
	// Resolution resolves every conflict: Manual (default; a conflict
	// keeps the merge from being written), PreferSource or PreferTarget.
	Resolution string `json:"resolution,omitempty"`
}

// MergeStatus is what the merge did, or would do.
type MergeStatus struct {
	// UpToDate: the source's head is in this heaven's history already.
	UpToDate bool `json:"upToDate,omitempty"`
	// Blocked: a Manual conflict kept the merge from being written.
	Blocked bool `json:"blocked,omitempty"`
	// Commit and Revision of the merge commit (empty when nothing was,
	// or would be, written).
	Commit   string `json:"commit,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	// Changes are the objects the merge changes.
	Changes []Change `json:"changes,omitempty"`
	// Conflicts are the fields both sides changed differently.
	Conflicts []Conflict `json:"conflicts,omitempty"`
}

// Conflict is one field both sides of a merge changed differently.
type Conflict struct {
	// Path is the object's path; Field the JSON path in it (empty: the
	// object itself, an edit against a delete).
	Path  string `json:"path"`
	Field string `json:"field,omitempty"`
	// Resolution is how it was resolved.
	Resolution string `json:"resolution"`
}
