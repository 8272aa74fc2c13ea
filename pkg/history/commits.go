package history

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// commits serves the heaven's branch history, newest first, as
// read-only Commit objects named by their hash.
type commits struct{ c Config }

var (
	_ rest.Getter               = (*commits)(nil)
	_ rest.Lister               = (*commits)(nil)
	_ rest.Scoper               = (*commits)(nil)
	_ rest.SingularNameProvider = (*commits)(nil)
)

func (*commits) New() runtime.Object     { return &v1alpha1.Commit{} }
func (*commits) NewList() runtime.Object { return &v1alpha1.CommitList{} }
func (*commits) Destroy()                {}
func (*commits) NamespaceScoped() bool   { return false }
func (*commits) GetSingularName() string { return "commit" }

// Get returns commit name (a full hash) of the heaven's history.
func (r *commits) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	b, err := r.c.branch(ctx)
	if err != nil {
		return nil, err
	}
	h, err := r.c.ownCommit(b, name)
	if err != nil {
		return nil, err
	}
	entries, _, err := b.Log(h, 1, "")
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if len(entries) == 0 {
		return nil, apierrors.NewNotFound(v1alpha1.SchemeGroupVersion.WithResource("commits").GroupResource(), name)
	}
	c := commitObject(entries[0])
	return &c, nil
}

// List walks the history from the head (or the continue token), newest
// first: at most Limit commits, and with the field selector path=PREFIX
// only those that changed an object under it.
func (r *commits) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	prefix, err := pathSelector(opts)
	if err != nil {
		return nil, err
	}
	b, err := r.c.branch(ctx)
	if err != nil {
		return nil, err
	}
	list := &v1alpha1.CommitList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(b.Revision(), 10)}}
	if opts != nil && opts.LabelSelector != nil && !opts.LabelSelector.Empty() {
		return list, nil // commits have no labels
	}
	var from plumbing.Hash
	limit := 0
	if opts != nil {
		if opts.Continue != "" {
			if from, err = r.c.ownCommit(b, opts.Continue); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("continue token %q: not a commit of heaven %s", opts.Continue, r.c.Heaven))
			}
		}
		limit = int(opts.Limit)
	}
	entries, next, err := b.Log(from, limit, prefix)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if !next.IsZero() {
		list.Continue = next.String()
	}
	for _, e := range entries {
		list.Items = append(list.Items, commitObject(e))
	}
	return list, nil
}

// pathSelector returns the key prefix of the field selector path=PREFIX
// (metadata.name=HASH is handled by the API server for gets).
func pathSelector(opts *metainternalversion.ListOptions) (string, error) {
	if opts == nil || opts.FieldSelector == nil || opts.FieldSelector.Empty() {
		return "", nil
	}
	prefix := ""
	for _, req := range opts.FieldSelector.Requirements() {
		if req.Field != v1alpha1.PathField || req.Operator != "=" && req.Operator != "==" {
			return "", apierrors.NewBadRequest(fmt.Sprintf("field selector %q: commits select only by %s=<object path prefix>", req.Field, v1alpha1.PathField))
		}
		prefix = req.Value
	}
	return keyPrefix(prefix), nil
}

// ownCommit parses name as a commit hash of the heaven's history: one
// reachable from its head. A commit of another heaven (the repository is
// shared) is not found, so its existence is not told.
func (c Config) ownCommit(b *gitstore.Branch, name string) (plumbing.Hash, error) {
	if len(name) != 40 || strings.Trim(strings.ToLower(name), "0123456789abcdef") != "" {
		return plumbing.ZeroHash, apierrors.NewNotFound(v1alpha1.SchemeGroupVersion.WithResource("commits").GroupResource(), name)
	}
	h := plumbing.NewHash(name)
	ok, err := c.Repo.IsAncestor(h, b.Head())
	if err != nil || !ok {
		return plumbing.ZeroHash, apierrors.NewNotFound(v1alpha1.SchemeGroupVersion.WithResource("commits").GroupResource(), name)
	}
	return h, nil
}

func commitObject(e gitstore.LogEntry) v1alpha1.Commit {
	c := v1alpha1.Commit{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Commit"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              e.Commit.String(),
			CreationTimestamp: metav1.NewTime(e.Committer.When),
		},
		Revision: e.Revision,
		Author:   v1alpha1.Signature{Name: e.Author.Name, Email: e.Author.Email, Time: metav1.NewTime(e.Author.When)},
		Message:  strings.TrimRight(e.Message, "\n"),
	}
	for _, p := range e.Parents {
		c.Parents = append(c.Parents, p.String())
	}
	for _, ch := range e.Changes {
		c.Changes = append(c.Changes, v1alpha1.Change{Path: gitstore.KeyPath(ch.Key), Deleted: ch.Deleted})
	}
	return c
}

// ConvertToTable shows commits as `git log --oneline` would, with who,
// when and how many objects.
func (r *commits) ConvertToTable(_ context.Context, obj runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	t := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "The commit's hash."},
		{Name: "Revision", Type: "integer", Description: "The heaven's resource version once the commit applied."},
		{Name: "Author", Type: "string", Description: "Who made the change."},
		{Name: "Age", Type: "string", Description: "When it was committed."},
		{Name: "Objects", Type: "integer", Description: "How many objects it changed."},
		{Name: "Message", Type: "string", Description: "The first line of its message."},
	}}
	var items []v1alpha1.Commit
	switch o := obj.(type) {
	case *v1alpha1.Commit:
		items = []v1alpha1.Commit{*o}
	case *v1alpha1.CommitList:
		items = o.Items
		t.ResourceVersion, t.Continue = o.ResourceVersion, o.Continue
	default:
		return nil, fmt.Errorf("not a commit: %T", obj)
	}
	for i := range items {
		c := &items[i]
		subject, _, _ := strings.Cut(c.Message, "\n")
		t.Rows = append(t.Rows, metav1.TableRow{
			Cells:  []any{c.Name, c.Revision, c.Author.Name, duration.HumanDuration(time.Since(c.CreationTimestamp.Time)), len(c.Changes), subject},
			Object: runtime.RawExtension{Object: c},
		})
	}
	return t, nil
}
