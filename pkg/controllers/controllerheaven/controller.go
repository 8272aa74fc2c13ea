// Package controllerheaven is the controller of ControllerHeaven objects
// (heaven.dev, in the root heaven): for each, a heaven of the controller's
// own forked from the heaven it works for, two AutomatedMerges between the
// two (specs in, statuses out), and the controller's Deployment in the
// physical cluster of a SyncTarget with a kubeconfig for its heaven only.
//
// The heaven and the merges are created as the ControllerHeaven's requester
// (impersonated: the root heaven's admission checks and records them as
// theirs, and the merge controller keeps checking their rights); the
// controller's identity (v1alpha1.ControllerUser) is an owner of its
// heaven and nothing elsewhere. Deleting the ControllerHeaven uninstalls
// the Deployment, revokes the controller's credentials and deletes the
// merges; the heaven and its branch stay.
package controllerheaven

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/asstored"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/reconcileloop"
	"github.com/heaven-dev/heaven/pkg/controllers/synctarget"
	"github.com/heaven-dev/heaven/pkg/deputy"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
)

// ControllerName names the controller in logs and as field manager.
const ControllerName = "controllerheaven"

// Condition reasons.
const (
	ReasonInstalled        = "Installed"
	ReasonNoRequester      = "NoRequester"
	ReasonHeavenFailed     = "HeavenFailed"
	ReasonMergeFailed      = "MergeFailed"
	ReasonSyncTargetNotSet = "SyncTargetNotUsable"
	ReasonInstallFailed    = "InstallFailed"
)

// Deps are what the controller needs of heaven-server.
type Deps struct {
	// Access reaches the SyncTargets' clusters and issues (and, once the
	// ControllerHeaven is deleted, revokes) the controller's credential.
	synctarget.Access
	// AsUser returns a client of the root heaven that acts as u.
	AsUser func(u user.Info) (versioned.Interface, error)
	// CredentialValidity is how long the controller's certificate is
	// valid; it is replaced at half of it.
	CredentialValidity time.Duration
}

// Controller reconciles ControllerHeavens.
type Controller struct {
	deps     Deps
	root     versioned.Interface  // as heaven-server: finalizers, status, cleanup
	rootKube kubernetes.Interface // the SyncTargets' kubeconfig Secrets
	factory  externalversions.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   heavenlisters.ControllerHeavenLister
	targets  heavenlisters.SyncTargetLister
	synced   []cache.InformerSynced
	loop     *reconcileloop.Loop
	now      func() time.Time
}

// New builds the controller over the root heaven's clients.
func New(root versioned.Interface, rootKube kubernetes.Interface, deps Deps) *Controller {
	if deps.CredentialValidity == 0 {
		deps.CredentialValidity = 30 * 24 * time.Hour
	}
	factory := externalversions.NewSharedInformerFactory(root, 0)
	chs := factory.Heaven().V1alpha1().ControllerHeavens()
	targets := factory.Heaven().V1alpha1().SyncTargets()
	c := &Controller{
		deps: deps, root: root, rootKube: rootKube, factory: factory,
		informer: chs.Informer(), lister: chs.Lister(), targets: targets.Lister(),
		synced: []cache.InformerSynced{chs.Informer().HasSynced, targets.Informer().HasSynced},
		now:    time.Now,
	}
	c.loop = reconcileloop.New(reconcileloop.Options{Name: ControllerName, KeyName: "controllerHeaven",
		RateLimiter: reconcileloop.Backoff(200*time.Millisecond, 2*time.Minute)}, c.reconcile)
	// A new spec or a deletion calls for work; the controller's own status
	// updates do not.
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.loop.Enqueue,
		UpdateFunc: func(old, obj any) {
			o, n := old.(*v1alpha1.ControllerHeaven), obj.(*v1alpha1.ControllerHeaven)
			if o.Generation != n.Generation || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
				c.loop.Enqueue(obj)
			}
		},
	})
	// A SyncTarget that appears or whose spec changes may make its
	// ControllerHeavens installable; its heartbeats (status) don't.
	_, _ = targets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueueFor(obj) },
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(*v1alpha1.SyncTarget); !ok || o.Generation != obj.(*v1alpha1.SyncTarget).Generation {
				c.enqueueFor(obj)
			}
		},
	})
	return c
}

func (c *Controller) enqueueFor(obj any) {
	st, ok := obj.(*v1alpha1.SyncTarget)
	if !ok {
		return
	}
	all, _ := c.lister.List(everything)
	for _, ch := range all {
		if ch.Spec.SyncTarget == st.Name {
			c.loop.Enqueue(ch)
		}
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.factory.StartWithContext(ctx)
	defer c.factory.Shutdown()
	klog.FromContext(ctx).Info("Starting the ControllerHeaven controller", "server", c.deps.ServerURL)
	c.loop.Run(ctx, workers, c.synced...)
}

func (c *Controller) reconcile(ctx context.Context, name string) (time.Duration, error) {
	ch, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ch = ch.DeepCopy()
	if ch.DeletionTimestamp != nil {
		return 0, c.finalize(ctx, ch)
	}
	if !slices.Contains(ch.Finalizers, v1alpha1.ControllerHeavenFinalizer) {
		ch.Finalizers = append(ch.Finalizers, v1alpha1.ControllerHeavenFinalizer)
		if ch, err = c.root.HeavenV1alpha1().ControllerHeavens().Update(ctx, ch, metav1.UpdateOptions{}); err != nil {
			return 0, err
		}
	}

	ready, after, err := c.ensure(ctx, ch)
	ready.ObservedGeneration = ch.Generation
	if statusErr := c.setStatus(ctx, ch, ready); statusErr != nil && err == nil {
		err = statusErr
	}
	return after, err
}

// ensure puts in place what ch asks for, in order, and says how far it got.
func (c *Controller) ensure(ctx context.Context, ch *v1alpha1.ControllerHeaven) (metav1.Condition, time.Duration, error) {
	fail := func(reason string, err error) metav1.Condition {
		return metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: reason, Message: err.Error()}
	}
	requester, ok := deputy.Requester(ch)
	if !ok {
		err := fmt.Errorf("no requester is recorded on the ControllerHeaven: recreate it")
		return fail(ReasonNoRequester, err), 0, nil // nothing to retry
	}
	as, err := c.deps.AsUser(requester)
	if err != nil {
		return fail(ReasonHeavenFailed, err), 0, err
	}
	heaven := ch.Spec.HeavenName(ch.Name)
	if err := c.ensureHeaven(ctx, as, ch, heaven); err != nil {
		return fail(ReasonHeavenFailed, err), 0, ignoreForbidden(err)
	}
	for _, m := range merges(ch) {
		if err := ensureMerge(ctx, as, m); err != nil {
			return fail(ReasonMergeFailed, err), 0, ignoreForbidden(err)
		}
	}
	rotateAt, err := c.install(ctx, ch, heaven)
	if err != nil {
		return fail(ReasonInstallFailed, err), 0, err
	}
	msg := fmt.Sprintf("heaven %s forked from %s, merged both ways; the controller is installed in namespace %s of SyncTarget %s's cluster",
		heaven, ch.Spec.Fork, Namespace(ch.Name), ch.Spec.SyncTarget)
	return metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ReasonInstalled, Message: msg}, rotateAt.Sub(c.now()), nil
}

// ignoreForbidden keeps a refusal from being retried in a hot loop: the
// requester lacks a right, which the status says; a change of the object
// (or a resync) tries again.
func ignoreForbidden(err error) error {
	if apierrors.IsForbidden(err) {
		return nil
	}
	return err
}

func (c *Controller) setStatus(ctx context.Context, ch *v1alpha1.ControllerHeaven, ready metav1.Condition) error {
	status := ch.Status.DeepCopy()
	status.ObservedGeneration = ch.Generation
	status.Heaven = ch.Spec.HeavenName(ch.Name)
	status.Namespace = Namespace(ch.Name)
	meta.SetStatusCondition(&status.Conditions, ready)
	if asstored.Equal(&ch.Status, status) {
		return nil
	}
	ch.Status = *status
	_, err := c.root.HeavenV1alpha1().ControllerHeavens().UpdateStatus(ctx, ch, metav1.UpdateOptions{})
	return err
}

// finalize uninstalls the controller and deletes the merges, then lets
// the ControllerHeaven go. The heaven stays.
func (c *Controller) finalize(ctx context.Context, ch *v1alpha1.ControllerHeaven) error {
	if !slices.Contains(ch.Finalizers, v1alpha1.ControllerHeavenFinalizer) {
		return nil
	}
	if err := c.uninstall(ctx, ch); err != nil {
		return err
	}
	if c.deps.Revoke != nil {
		if err := c.deps.Revoke(v1alpha1.ControllerUser(ch.Name)); err != nil {
			return fmt.Errorf("revoking the controller's credentials: %w", err)
		}
	}
	for _, m := range merges(ch) {
		err := c.root.HeavenV1alpha1().AutomatedMerges().Delete(ctx, m.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting AutomatedMerge %s: %w", m.Name, err)
		}
	}
	ch.Finalizers = slices.DeleteFunc(ch.Finalizers, func(f string) bool { return f == v1alpha1.ControllerHeavenFinalizer })
	_, err := c.root.HeavenV1alpha1().ControllerHeavens().Update(ctx, ch, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
