package splitter

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/controllers/internal/reconcileloop"
)

// ControllerName names the splitter in logs and user agents.
const ControllerName = "deployment-splitter"

// Controller splits the labelled Deployments of one heaven.
type Controller struct {
	kube     kubernetes.Interface
	factory  informers.SharedInformerFactory
	lister   appslisters.DeploymentLister
	informer cache.SharedIndexInformer
	loop     *reconcileloop.Loop
	// targets lists the heaven's SyncTargets.
	targets func() []string
}

// New builds the splitter of the heaven kube reaches; targets lists the
// SyncTargets of that heaven.
func New(kube kubernetes.Interface, targets func() []string) *Controller {
	factory := informers.NewSharedInformerFactory(kube, 0)
	inf := factory.Apps().V1().Deployments()
	c := &Controller{
		kube:     kube,
		factory:  factory,
		lister:   inf.Lister(),
		informer: inf.Informer(),
		targets:  targets,
	}
	c.loop = reconcileloop.New(reconcileloop.Options{Name: ControllerName, KeyName: "deployment"},
		func(ctx context.Context, key string) (time.Duration, error) { return 0, c.reconcile(ctx, key) })
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	return c
}

// enqueue queues the parent a Deployment is or belongs to.
func (c *Controller) enqueue(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	if parent, isChild := d.Labels[ParentLabel]; isChild {
		c.loop.Add(d.Namespace + "/" + parent)
		return
	}
	if _, split := d.Labels[SplitLabel]; split || hasFinalizer(d) {
		c.loop.Add(d.Namespace + "/" + d.Name)
	}
}

// TargetsChanged re-splits every split Deployment (a SyncTarget of the
// heaven came or went).
func (c *Controller) TargetsChanged() {
	for _, obj := range c.informer.GetStore().List() {
		c.enqueue(obj)
	}
}

// Run splits until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.factory.StartWithContext(ctx)
	defer c.factory.Shutdown()
	c.loop.Run(ctx, workers, c.informer.HasSynced)
}

// reconcile brings the children of Deployment key in line with it, and its
// status in line with theirs.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	kids, err := c.lister.Deployments(ns).List(labels.SelectorFromSet(labels.Set{ParentLabel: name}))
	if err != nil {
		return err
	}
	parent, err := c.lister.Deployments(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return c.deleteAll(ctx, kids)
	case err != nil:
		return err
	}
	_, split := parent.Labels[SplitLabel]
	switch {
	case parent.DeletionTimestamp != nil || !split:
		if err := c.deleteAll(ctx, kids); err != nil {
			return err
		}
		return c.setFinalizer(ctx, parent, false)
	case !hasFinalizer(parent):
		return c.setFinalizer(ctx, parent, true) // the update queues it again
	}
	want := children(parent.DeepCopy(), targetsOf(parent, c.targets()))
	current, err := c.apply(ctx, want, kids)
	if err != nil {
		return err
	}
	st := aggregate(parent, current)
	if apiequality.Semantic.DeepEqual(parent.Status, st) {
		return nil
	}
	p := parent.DeepCopy()
	p.Status = st
	_, err = c.kube.AppsV1().Deployments(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{FieldManager: ControllerName})
	return err
}

// apply creates and updates the wanted children and deletes the others; it
// returns the children as they are now.
func (c *Controller) apply(ctx context.Context, want, have []*appsv1.Deployment) ([]*appsv1.Deployment, error) {
	client := func(ns string) interface {
		Create(context.Context, *appsv1.Deployment, metav1.CreateOptions) (*appsv1.Deployment, error)
		Update(context.Context, *appsv1.Deployment, metav1.UpdateOptions) (*appsv1.Deployment, error)
	} {
		return c.kube.AppsV1().Deployments(ns)
	}
	byName := map[string]*appsv1.Deployment{}
	for _, h := range have {
		byName[h.Name] = h
	}
	var out []*appsv1.Deployment
	for _, w := range want {
		h, ok := byName[w.Name]
		delete(byName, w.Name)
		switch {
		case !ok:
			created, err := client(w.Namespace).Create(ctx, w, metav1.CreateOptions{FieldManager: ControllerName})
			if err != nil {
				return nil, fmt.Errorf("creating %s: %w", w.Name, err)
			}
			out = append(out, created)
		case !apiequality.Semantic.DeepEqual(h.Labels, w.Labels) || !apiequality.Semantic.DeepEqual(h.Spec, w.Spec):
			u := h.DeepCopy()
			u.Labels, u.Spec, u.OwnerReferences = w.Labels, w.Spec, w.OwnerReferences
			updated, err := client(u.Namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: ControllerName})
			if err != nil {
				return nil, fmt.Errorf("updating %s: %w", w.Name, err)
			}
			out = append(out, updated)
		default:
			out = append(out, h)
		}
	}
	var extra []*appsv1.Deployment
	for _, h := range byName {
		extra = append(extra, h)
	}
	return out, c.deleteAll(ctx, extra)
}

func (c *Controller) deleteAll(ctx context.Context, kids []*appsv1.Deployment) error {
	for _, k := range kids {
		err := c.kube.AppsV1().Deployments(k.Namespace).Delete(ctx, k.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s: %w", k.Name, err)
		}
	}
	return nil
}

func hasFinalizer(d *appsv1.Deployment) bool {
	for _, f := range d.Finalizers {
		if f == Finalizer {
			return true
		}
	}
	return false
}

// setFinalizer adds or removes the splitter's finalizer.
func (c *Controller) setFinalizer(ctx context.Context, d *appsv1.Deployment, on bool) error {
	if hasFinalizer(d) == on {
		return nil
	}
	u := d.DeepCopy()
	if on {
		u.Finalizers = append(u.Finalizers, Finalizer)
	} else {
		u.Finalizers = nil
		for _, f := range d.Finalizers {
			if f != Finalizer {
				u.Finalizers = append(u.Finalizers, f)
			}
		}
	}
	_, err := c.kube.AppsV1().Deployments(d.Namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: ControllerName})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
