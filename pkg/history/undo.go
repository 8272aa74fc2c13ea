package history

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// A revert or a restore is one transaction of the heaven's store: it
// writes each object back (or deletes it) only if the object is still what
// the undone commit left, or what it is now when the user asked; it is the
// commit of the user who asked, and the heaven's watchers see it as any
// write. It goes around the objects' REST storage (no admission, no
// validation): what it writes was stored once.

// reverts undoes commits.
type reverts struct{ c Config }

var (
	_ rest.Creater              = (*reverts)(nil)
	_ rest.Scoper               = (*reverts)(nil)
	_ rest.SingularNameProvider = (*reverts)(nil)
)

func (*reverts) New() runtime.Object     { return &v1alpha1.Revert{} }
func (*reverts) Destroy()                {}
func (*reverts) NamespaceScoped() bool   { return false }
func (*reverts) GetSingularName() string { return "revert" }

// Create reverts the commit spec names.
func (r *reverts) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	rv, ok := obj.(*v1alpha1.Revert)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Revert: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	b, err := r.c.branch(ctx)
	if err != nil {
		return nil, err
	}
	commit, err := r.c.revertedCommit(b, rv.Spec)
	if err != nil {
		return nil, err
	}
	entries, parent, err := b.Log(commit, 1, "")
	if err != nil || len(entries) == 0 {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading commit %s: %v", commit, err))
	}
	if len(entries[0].Parents) > 1 {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("commit %s is a merge: revert the merged commits, or restore objects to a revision", commit))
	}
	var keys []string
	for _, ch := range entries[0].Changes {
		keys = append(keys, ch.Key)
	}
	before, err := values(r.c.Repo, parent, keys)
	if err != nil {
		return nil, err
	}
	after, err := values(r.c.Repo, commit, keys)
	if err != nil {
		return nil, err
	}
	out := rv.DeepCopy()
	out.Status, err = r.c.undo(ctx, b, commit.String(), keys, after, before)
	return out, err
}

// revertedCommit finds the commit a RevertSpec names in the heaven's
// history.
func (c Config) revertedCommit(b *gitstore.Branch, spec v1alpha1.RevertSpec) (plumbing.Hash, error) {
	switch {
	case spec.Commit != "" && spec.Revision != 0:
		return plumbing.ZeroHash, apierrors.NewBadRequest("spec: name either a commit or a revision")
	case spec.Commit != "":
		return c.ownCommit(b, spec.Commit)
	case spec.Revision > 0:
		h, rev, err := b.CommitAt(spec.Revision)
		if err != nil {
			return plumbing.ZeroHash, apierrors.NewBadRequest(fmt.Sprintf("spec.revision: %v", err))
		}
		if rev != spec.Revision {
			return plumbing.ZeroHash, apierrors.NewBadRequest(fmt.Sprintf("spec.revision: no commit made revision %d (the one before is at %d)", spec.Revision, rev))
		}
		return h, nil
	}
	return plumbing.ZeroHash, apierrors.NewBadRequest("spec: name the commit (spec.commit) or its revision (spec.revision)")
}

// restores puts objects back as they were at a revision.
type restores struct{ c Config }

var (
	_ rest.Creater              = (*restores)(nil)
	_ rest.Scoper               = (*restores)(nil)
	_ rest.SingularNameProvider = (*restores)(nil)
)

func (*restores) New() runtime.Object     { return &v1alpha1.Restore{} }
func (*restores) Destroy()                {}
func (*restores) NamespaceScoped() bool   { return false }
func (*restores) GetSingularName() string { return "restore" }

// Create restores the object spec names.
func (r *restores) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	rs, ok := obj.(*v1alpha1.Restore)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Restore: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	key, err := objectKey(rs.Spec.Path)
	if err != nil {
		return nil, apierrors.NewBadRequest("spec.path: " + err.Error())
	}
	if rs.Spec.Revision <= 0 {
		return nil, apierrors.NewBadRequest("spec.revision: must be positive")
	}
	b, err := r.c.branch(ctx)
	if err != nil {
		return nil, err
	}
	at, _, err := b.CommitAt(rs.Spec.Revision)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.revision: %v", err))
	}
	then, err := values(r.c.Repo, at, []string{key})
	if err != nil {
		return nil, err
	}
	cur, _, err := b.Get(ctx, key, 0)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	now := map[string][]byte{}
	if cur != nil {
		now[key] = cur.Value
	}
	out := rs.DeepCopy()
	out.Status, err = r.c.undo(ctx, b, rs.Spec.Path, []string{key}, now, then)
	return out, err
}

// undo sets keys from their expected values (absent: no object) to their
// wanted ones in one transaction of the request's user, after checking
// that the user may make each change. It fails with a Conflict (about
// what, a commit or a path) if a key is no longer as expected.
func (c Config) undo(ctx context.Context, b *gitstore.Branch, what string, keys []string, expected, wanted map[string][]byte) (v1alpha1.UndoStatus, error) {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return v1alpha1.UndoStatus{}, apierrors.NewUnauthorized("no user")
	}
	sort.Strings(keys)
	txn := &gitstore.Txn{Author: u.GetName()}
	var status v1alpha1.UndoStatus
	for _, k := range keys {
		was, existed := expected[k]
		want, keep := wanted[k]
		if existed == keep && bytes.Equal(was, want) {
			continue
		}
		verb := "update"
		switch {
		case !keep:
			verb = "delete"
			txn.Then = append(txn.Then, gitstore.Op{Delete: &gitstore.DeleteOp{Key: k}})
		case !existed:
			verb = "create"
			txn.Then = append(txn.Then, gitstore.Op{Put: &gitstore.PutOp{Key: k, Value: want}})
		default:
			txn.Then = append(txn.Then, gitstore.Op{Put: &gitstore.PutOp{Key: k, Value: want}})
		}
		if existed {
			txn.If = append(txn.If, gitstore.Compare{Key: k, Target: gitstore.CompareValue, Result: gitstore.Equal, Value: was})
		} else {
			txn.If = append(txn.If, gitstore.Compare{Key: k, Target: gitstore.CompareVersion, Result: gitstore.Equal, Number: 0})
		}
		if err := c.authorizeWrite(ctx, u, verb, k); err != nil {
			return status, err
		}
		status.Changes = append(status.Changes, v1alpha1.Change{Path: gitstore.KeyPath(k), Deleted: !keep})
	}
	if len(txn.Then) == 0 {
		return status, nil
	}
	res, err := b.Txn(ctx, txn)
	if err != nil {
		return status, apierrors.NewInternalError(err)
	}
	if !res.Succeeded {
		return status, apierrors.NewConflict(v1alpha1.SchemeGroupVersion.WithResource("commits").GroupResource(), what,
			fmt.Errorf("an object to undo has changed since (one of %s): restore objects one by one to a revision instead", strings.Join(changedPaths(status.Changes), ", ")))
	}
	status.Revision = res.Revision
	if h, _, err := b.CommitAt(res.Revision); err == nil {
		status.Commit = h.String()
	}
	return status, nil
}

// authorizeWrite checks that u may do verb to the object of key, as if
// the request were the object's own.
func (c Config) authorizeWrite(ctx context.Context, u user.Info, verb, key string) error {
	attrs := writeAttributes(u, verb, key)
	if d, reason, err := c.Authorizer.Authorize(ctx, attrs); err != nil || d != authorizer.DecisionAllow {
		if reason != "" {
			reason = ": " + reason
		}
		return apierrors.NewForbidden(schema.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name,
			fmt.Errorf("user %q may not %s %s%s", u.GetName(), verb, gitstore.KeyPath(key), reason))
	}
	return nil
}

func changedPaths(changes []v1alpha1.Change) []string {
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	return paths
}
