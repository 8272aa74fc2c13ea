// Package heaven is the controller of Heaven objects in the root heaven: it
// creates a heaven's branch (forking it when asked), reports the branch's
// head and revision in status, and on deletion stops serving the heaven
// (and deletes its branch if the Heaven says so).
package heaven

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/asstored"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/reconcileloop"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	heavenclient "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/typed/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
)

// Branches is what the controller needs of the git store and of
// heaven-server; function fields so tests can use closures.
type Branches struct {
	// Info says whether the heaven's branch exists, with its head commit
	// and revision (-1 when not known without replaying history).
	Info func(ctx context.Context, name string) (exists bool, head string, revision int64, err error)
	// Fork creates branch name from heaven from at revision rev.
	Fork func(ctx context.Context, name, from string, rev int64) (commit string, revision int64, err error)
	// Initialize starts the heaven once so that its branch gets its
	// initial objects.
	Initialize func(ctx context.Context, name string) error
	// Clone, if set, creates branch name at the head of the remote branch
	// a Heaven tracks (spec.remote), and says whether it did (not when
	// the remote has no such branch).
	Clone func(ctx context.Context, name string, remote *v1alpha1.Remote) (bool, error)
	// Stop stops serving the heaven.
	Stop func(ctx context.Context, name string)
	// Delete deletes the heaven's branch.
	Delete func(name string) error
	// BindOwners, if set, makes owners (users) cluster-admin of the
	// heaven through its ClusterRoleBinding v1alpha1.OwnersBinding, or
	// deletes that binding when there are none.
	BindOwners func(ctx context.Context, name string, owners []string) error
	// Problems, if set, lists the files of the heaven's branch that are
	// not served; known is false while the branch has not been read.
	Problems func(name string) (problems []FileProblem, known bool)
}

// FileProblem is a file of a heaven's branch that is not served.
type FileProblem struct {
	Path, Commit, Err string
}

// Controller reconciles Heaven objects.
type Controller struct {
	client   heavenclient.HeavenInterface
	informer cache.SharedIndexInformer
	lister   heavenlisters.HeavenLister
	factory  externalversions.SharedInformerFactory
	loop     *reconcileloop.Loop
	branches Branches
	// resync re-reads every heaven's head and revision this often.
	resync time.Duration
}

// New builds the controller over the root heaven's client.
func New(client versioned.Interface, branches Branches, resync time.Duration) *Controller {
	factory := externalversions.NewSharedInformerFactory(client, resync)
	heavens := factory.Heaven().V1alpha1().Heavens()
	c := &Controller{
		client:   client.HeavenV1alpha1().Heavens(),
		factory:  factory,
		informer: heavens.Informer(),
		lister:   heavens.Lister(),
		branches: branches,
		resync:   resync,
	}
	c.loop = reconcileloop.New(reconcileloop.Options{Name: "heaven", KeyName: "heaven"},
		func(ctx context.Context, name string) (time.Duration, error) { return 0, c.reconcile(ctx, name) })
	_, _ = c.informer.AddEventHandler(c.loop.Handler())
	return c
}

// Exists says whether a Heaven object names heaven name (from the cache
// once synced, else from the server).
func (c *Controller) Exists(ctx context.Context, name string) (bool, error) {
	var err error
	if c.informer.HasSynced() {
		_, err = c.lister.Get(name)
	} else {
		_, err = c.client.Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Type returns the API heaven name serves, as its Heaven says: from the
// cache, or from root when the cache has no such Heaven (yet). A heaven
// without a Heaven object is generic.
func (c *Controller) Type(ctx context.Context, name string) (v1alpha1.HeavenType, error) {
	h, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		h, err = c.client.Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return v1alpha1.HeavenTypeGeneric, nil
	}
	if err != nil {
		return "", fmt.Errorf("the Heaven of %s: %w", name, err)
	}
	return v1alpha1.TypeOf(h), nil
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.factory.StartWithContext(ctx)
	defer c.factory.Shutdown()
	c.loop.Run(ctx, workers, c.informer.HasSynced)
}

func (c *Controller) reconcile(ctx context.Context, name string) error {
	cached, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	h := cached.DeepCopy()
	if h.DeletionTimestamp != nil {
		return c.finalize(ctx, h)
	}
	if !hasFinalizer(h) {
		h.Finalizers = append(h.Finalizers, v1alpha1.HeavenFinalizer)
		_, err := c.client.Update(ctx, h, metav1.UpdateOptions{})
		return err // the update brings the object back through the queue
	}
	status := h.Status.DeepCopy()
	status.Branch = name
	exists, head, rev, err := c.branches.Info(ctx, name)
	if err != nil {
		return err
	}
	switch {
	case !exists && h.Spec.Fork != nil:
		commit, at, err := c.branches.Fork(ctx, name, h.Spec.Fork.Heaven, h.Spec.Fork.Revision)
		if err != nil {
			status.Phase, status.Message = v1alpha1.HeavenPhaseFailed, fmt.Sprintf("forking %s: %v", h.Spec.Fork.Heaven, err)
			return c.updateStatus(ctx, h, status)
		}
		status.ForkedFrom = &v1alpha1.ForkedFrom{Heaven: h.Spec.Fork.Heaven, Commit: commit, Revision: at}
		if _, head, rev, err = c.branches.Info(ctx, name); err != nil {
			return err
		}
		if rev < 0 {
			rev = at // the fork is at its source's revision until written
		}
	case !exists:
		if !c.clone(ctx, h) {
			if err := c.branches.Initialize(ctx, name); err != nil {
				return err
			}
		}
		if _, head, rev, err = c.branches.Info(ctx, name); err != nil {
			return err
		}
	}
	if owners := ownersOf(h); c.branches.BindOwners != nil && !slices.Equal(owners, status.Owners) {
		if err := c.branches.BindOwners(ctx, name, owners); err != nil {
			return fmt.Errorf("binding the owners of heaven %s: %w", name, err)
		}
		status.Owners = owners
		if _, head, rev, err = c.branches.Info(ctx, name); err != nil {
			return err
		}
	}
	status.Phase, status.Message, status.Head = v1alpha1.HeavenPhaseReady, "", head
	if rev >= 0 {
		status.Revision = rev
	}
	c.setOutsideCommitsCondition(status, name, h.Generation)
	return c.updateStatus(ctx, h, status)
}

// ownersOf is the users who own h: its creator, unless heaven-server made
// it (adopting a branch or a heaven created on first use), and spec.owners;
// sorted, each once.
func ownersOf(h *v1alpha1.Heaven) []string {
	owners := slices.Clone(h.Spec.Owners)
	if creator := h.Annotations[v1alpha1.CreatedByAnnotation]; creator != "" && creator != user.APIServerUser {
		owners = append(owners, creator)
	}
	slices.Sort(owners)
	owners = slices.Compact(owners)
	if len(owners) > 0 && owners[0] == "" {
		owners = owners[1:]
	}
	return owners
}

// CreatedBy counts the Heavens that user created and that are not being
// deleted, as the controller's cache has them.
func (c *Controller) CreatedBy(user string) int {
	heavens, _ := c.lister.List(labels.Everything()) // a cache's List never fails
	n := 0
	for _, h := range heavens {
		if h.DeletionTimestamp == nil && h.Annotations[v1alpha1.CreatedByAnnotation] == user {
			n++
		}
	}
	return n
}

// Names are the heavens with a Heaven object not being deleted, as the
// controller's cache has them.
func (c *Controller) Names() []string {
	heavens, _ := c.lister.List(labels.Everything()) // a cache's List never fails
	var names []string
	for _, h := range heavens {
		if h.DeletionTimestamp == nil {
			names = append(names, h.Name)
		}
	}
	return names
}

// Enqueue asks for heaven name's status to be brought up to date (its
// files not served changed).
func (c *Controller) Enqueue(name string) { c.loop.Add(name) }

// maxListedProblems bounds the files a condition's message names.
const maxListedProblems = 5

// setOutsideCommitsCondition reports the branch's files that are not
// served; while the branch is not open it keeps what it said last.
func (c *Controller) setOutsideCommitsCondition(status *v1alpha1.HeavenStatus, name string, generation int64) {
	if c.branches.Problems == nil {
		return
	}
	problems, known := c.branches.Problems(name)
	if !known {
		return
	}
	cond := metav1.Condition{Type: v1alpha1.ConditionOutsideCommitsHealthy, Status: metav1.ConditionTrue,
		Reason: v1alpha1.ReasonAllFilesServed, Message: "Every file of the branch is served.", ObservedGeneration: generation}
	if len(problems) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "%d file(s) of the branch are not served; their objects keep their last good version until a commit fixes or removes them:", len(problems))
		for i, p := range problems {
			if i == maxListedProblems {
				fmt.Fprintf(&b, " and %d more", len(problems)-i)
				break
			}
			fmt.Fprintf(&b, " %s (commit %s): %s;", p.Path, p.Commit, p.Err)
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, v1alpha1.ReasonFilesNotServed, strings.TrimSuffix(b.String(), ";")
	}
	meta.SetStatusCondition(&status.Conditions, cond)
}

// clone starts a new heaven that tracks a git remote from the remote's
// branch, and says whether it did. A remote that cannot be reached does not
// hold the heaven back: it starts empty, and the remote controller merges
// the remote branch into it later.
func (c *Controller) clone(ctx context.Context, h *v1alpha1.Heaven) bool {
	if h.Spec.Remote == nil || c.branches.Clone == nil {
		return false
	}
	cloned, err := c.branches.Clone(ctx, h.Name, h.Spec.Remote)
	if err != nil {
		klog.FromContext(ctx).Info("Could not start the heaven from its remote branch; starting it empty", "heaven", h.Name, "err", err)
	}
	return cloned
}

func (c *Controller) finalize(ctx context.Context, h *v1alpha1.Heaven) error {
	if !hasFinalizer(h) {
		return nil
	}
	if h.Status.Phase != v1alpha1.HeavenPhaseTerminating {
		status := h.Status.DeepCopy()
		status.Phase = v1alpha1.HeavenPhaseTerminating
		if err := c.updateStatus(ctx, h, status); err != nil {
			return err
		}
		return nil // the update brings it back
	}
	c.branches.Stop(ctx, h.Name)
	if h.Spec.DeletePolicy == v1alpha1.DeletePolicyDelete {
		if err := c.branches.Delete(h.Name); err != nil {
			return fmt.Errorf("deleting branch %s: %w", h.Name, err)
		}
	}
	var keep []string
	for _, f := range h.Finalizers {
		if f != v1alpha1.HeavenFinalizer {
			keep = append(keep, f)
		}
	}
	h.Finalizers = keep
	_, err := c.client.Update(ctx, h, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// updateStatus writes status as h's if it changed what is stored.
func (c *Controller) updateStatus(ctx context.Context, h *v1alpha1.Heaven, status *v1alpha1.HeavenStatus) error {
	if asstored.Equal(&h.Status, status) {
		return nil
	}
	h.Status = *status
	_, err := c.client.UpdateStatus(ctx, h, metav1.UpdateOptions{})
	return err
}

func hasFinalizer(h *v1alpha1.Heaven) bool {
	for _, f := range h.Finalizers {
		if f == v1alpha1.HeavenFinalizer {
			return true
		}
	}
	return false
}
