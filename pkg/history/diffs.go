package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// diffs compares two points of history, object by object.
type diffs struct{ c Config }

var (
	_ rest.Creater              = (*diffs)(nil)
	_ rest.Scoper               = (*diffs)(nil)
	_ rest.SingularNameProvider = (*diffs)(nil)
)

func (*diffs) New() runtime.Object     { return &v1alpha1.Diff{} }
func (*diffs) Destroy()                {}
func (*diffs) NamespaceScoped() bool   { return false }
func (*diffs) GetSingularName() string { return "diff" }

// Create answers the Diff: the objects that differ between spec.from and
// spec.to (only those under spec.pathPrefix), each side as stored.
func (r *diffs) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	d, ok := obj.(*v1alpha1.Diff)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Diff: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	from, err := r.c.commitOf(ctx, d.Spec.From, "spec.from")
	if err != nil {
		return nil, err
	}
	to, err := r.c.commitOf(ctx, d.Spec.To, "spec.to")
	if err != nil {
		return nil, err
	}
	changed, err := r.c.Repo.ChangedKeys(from, to)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	prefix := keyPrefix(d.Spec.PathPrefix)
	var keys []string
	for _, k := range changed {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	before, err := values(r.c.Repo, from, keys)
	if err != nil {
		return nil, err
	}
	after, err := values(r.c.Repo, to, keys)
	if err != nil {
		return nil, err
	}
	out := d.DeepCopy()
	out.Status = v1alpha1.DiffStatus{FromCommit: from.String(), ToCommit: to.String()}
	for _, k := range keys {
		a, inFrom := before[k]
		z, inTo := after[k]
		o := v1alpha1.ObjectDiff{Path: gitstore.KeyPath(k)}
		switch {
		case inFrom && inTo:
			if bytes.Equal(a, z) {
				continue
			}
			o.Change = v1alpha1.Modified
		case inTo:
			o.Change = v1alpha1.Added
		case inFrom:
			o.Change = v1alpha1.Removed
		default:
			continue
		}
		if inFrom {
			o.From = &runtime.RawExtension{Raw: a}
		}
		if inTo {
			o.To = &runtime.RawExtension{Raw: z}
		}
		out.Status.Objects = append(out.Status.Objects, o)
	}
	return out, nil
}

// commitOf finds the commit of a point of history: a revision of this
// heaven, or the head of another heaven the user may read.
func (c Config) commitOf(ctx context.Context, p v1alpha1.Point, field string) (plumbing.Hash, error) {
	if p.Revision < 0 {
		return plumbing.ZeroHash, apierrors.NewBadRequest(fmt.Sprintf("%s.revision: must not be negative", field))
	}
	if p.Heaven != "" && p.Heaven != c.Heaven {
		if p.Revision != 0 {
			return plumbing.ZeroHash, apierrors.NewBadRequest(fmt.Sprintf("%s: a revision of another heaven (%s): ask that heaven for the diff", field, p.Heaven))
		}
		if c.MayRead == nil {
			return plumbing.ZeroHash, apierrors.NewBadRequest(fmt.Sprintf("%s: diffs against other heavens are not served", field))
		}
		if err := c.MayRead(ctx, p.Heaven); err != nil {
			return plumbing.ZeroHash, err
		}
		head, _, err := c.Repo.Head(p.Heaven)
		if err != nil {
			return plumbing.ZeroHash, apierrors.NewInternalError(err)
		}
		if head.IsZero() {
			return plumbing.ZeroHash, apierrors.NewNotFound(v1alpha1.SchemeGroupVersion.WithResource("heavens").GroupResource(), p.Heaven)
		}
		return head, nil
	}
	b, err := c.branch(ctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h, _, err := b.CommitAt(p.Revision)
	if errors.Is(err, gitstore.ErrFutureRev) {
		return plumbing.ZeroHash, apierrors.NewBadRequest(fmt.Sprintf("%s.revision: %v", field, err))
	}
	if err != nil {
		return plumbing.ZeroHash, apierrors.NewInternalError(err)
	}
	return h, nil
}

// values reads keys at commit; a file that can't be served fails the
// request, naming it.
func values(repo *gitstore.Repository, commit plumbing.Hash, keys []string) (map[string][]byte, error) {
	if commit.IsZero() || len(keys) == 0 {
		return map[string][]byte{}, nil
	}
	v, err := repo.Values(commit, keys)
	if err != nil {
		if _, ok := gitstore.IsFileErrors(err); ok {
			return nil, apierrors.NewConflict(v1alpha1.SchemeGroupVersion.WithResource("commits").GroupResource(), commit.String(), err)
		}
		return nil, apierrors.NewInternalError(err)
	}
	return v, nil
}
