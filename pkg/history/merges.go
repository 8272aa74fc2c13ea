package history

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	heavenv1alpha1 "github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// merges merges another heaven into this one once, with the engine of
// AutomatedMerges (gitstore.MergeCommit).
type merges struct{ c Config }

var (
	_ rest.Creater              = (*merges)(nil)
	_ rest.Scoper               = (*merges)(nil)
	_ rest.SingularNameProvider = (*merges)(nil)
)

func (*merges) New() runtime.Object     { return &v1alpha1.Merge{} }
func (*merges) Destroy()                {}
func (*merges) NamespaceScoped() bool   { return false }
func (*merges) GetSingularName() string { return "merge" }

// Create merges spec.source's head into the heaven, or with dry run says
// what that would do.
func (r *merges) Create(ctx context.Context, obj runtime.Object, validate rest.ValidateObjectFunc, opts *metav1.CreateOptions) (runtime.Object, error) {
	m, ok := obj.(*v1alpha1.Merge)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Merge: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, obj); err != nil {
			return nil, err
		}
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no user")
	}
	merger, include, err := mergePlan(m.Spec)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if m.Spec.Source == r.c.Heaven {
		return nil, apierrors.NewBadRequest("spec.source: the heaven itself")
	}
	source, err := r.c.commitOf(ctx, v1alpha1.Point{Heaven: m.Spec.Source}, "spec.source")
	if err != nil {
		return nil, err
	}
	b, err := r.c.branch(ctx)
	if err != nil {
		return nil, err
	}
	dryRun := opts != nil && len(opts.DryRun) > 0
	target := &checkedTarget{Branch: b, c: r.c, ctx: ctx, dryRun: dryRun}
	out, err := gitstore.MergeCommit(ctx, r.c.Repo, target, source, gitstore.MergeCommitOptions{
		Merger:  merger,
		Include: include,
		Message: fmt.Sprintf("merge heaven %s (%s) into %s", m.Spec.Source, source.String()[:12], r.c.Heaven),
		Author:  u.GetName(),
	})
	if target.denied != nil {
		return nil, target.denied
	}
	if errors.Is(err, gitstore.ErrNoTargetHead) {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("heaven %s has no commits to merge into", r.c.Heaven))
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	res := m.DeepCopy()
	res.Status = v1alpha1.MergeStatus{UpToDate: out.UpToDate, Blocked: out.Blocked, Changes: target.changes}
	if !out.Written.Commit.IsZero() {
		res.Status.Commit, res.Status.Revision = out.Written.Commit.String(), out.Written.Revision
	}
	for _, c := range out.Conflicts {
		res.Status.Conflicts = append(res.Status.Conflicts, v1alpha1.Conflict{Path: gitstore.KeyPath(c.Key), Field: c.Path, Resolution: string(c.Resolution)})
	}
	return res, nil
}

// mergePlan is the merger and the resource filter of a MergeSpec.
func mergePlan(spec v1alpha1.MergeSpec) (merge.Merger, func(string) bool, error) {
	if err := heavenv1alpha1.ValidateHeavenName(spec.Source); err != nil {
		return merge.Merger{}, nil, fmt.Errorf("spec.source: %w", err)
	}
	resolution := merge.Resolution(spec.Resolution)
	if resolution == "" {
		resolution = merge.Manual
	}
	policy := merge.Policy{Default: resolution, Fallback: merge.KubernetesRules}
	if err := policy.Validate(); err != nil {
		return merge.Merger{}, nil, fmt.Errorf("spec.resolution: %w", err)
	}
	for _, r := range spec.Resources {
		if strings.Count(r, "/") != 1 || strings.HasPrefix(r, "/") || strings.HasSuffix(r, "/") {
			return merge.Merger{}, nil, fmt.Errorf("spec.resources: %q: want <group or core>/<resource>", r)
		}
	}
	include := func(resource string) bool {
		return resource != "" && (len(spec.Resources) == 0 || slices.Contains(spec.Resources, resource))
	}
	return merge.Merger{Policy: policy, Lists: builtin.ListRules()}, include, nil
}

// checkedTarget is the heaven's branch as a merge target that checks the
// user may write every object a merge changes, and with dry run writes
// nothing.
type checkedTarget struct {
	*gitstore.Branch
	c      Config
	ctx    context.Context
	dryRun bool

	changes []v1alpha1.Change
	denied  error
}

func (t *checkedTarget) Merge(ctx context.Context, req gitstore.MergeRequest) (gitstore.MergeResult, error) {
	u, _ := request.UserFrom(t.ctx)
	t.changes = t.changes[:0]
	var keys []string
	for k := range req.Puts {
		keys = append(keys, k)
	}
	keys = append(keys, req.Deletes...)
	slices.Sort(keys)
	for _, k := range keys {
		_, put := req.Puts[k]
		verb := "delete"
		if put {
			cur, _, err := t.Get(ctx, k, 0)
			if err != nil {
				return gitstore.MergeResult{}, err
			}
			verb = "update"
			if cur == nil {
				verb = "create"
			}
		}
		if err := t.c.authorizeWrite(ctx, u, verb, k); err != nil {
			t.denied = err
			return gitstore.MergeResult{}, err
		}
		t.changes = append(t.changes, v1alpha1.Change{Path: gitstore.KeyPath(k), Deleted: !put})
	}
	if t.dryRun {
		return gitstore.MergeResult{}, nil
	}
	return t.Branch.Merge(ctx, req)
}
