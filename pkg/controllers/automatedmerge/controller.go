// Package automatedmerge is the controller of AutomatedMerge objects in the
// root heaven: it merges the branches of source heavens into a target
// heaven's branch (MergeCommit), on every change of a source and at an
// interval, and reports each merge and each conflict in status and as
// Events.
//
// Heavens are merged through their git branches: a heaven whose API server
// is stopped (idle) is merged into all the same, and its watchers see the
// merge as ordinary events once it runs.
package automatedmerge

import (
	"context"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// ControllerName is the controller's name in events and logs.
const ControllerName = "automatedmerge-controller"

// Branches is what the controller needs of the git store and of
// heaven-server; function fields so tests can use closures.
type Branches struct {
	// Commits reads any commit (merge bases, changed keys, values).
	Commits gitstore.CommitReader
	// Head returns the head commit of heaven name's branch, zero when it
	// has none, without starting the heaven.
	Head func(ctx context.Context, name string) (plumbing.Hash, error)
	// Open opens heaven name's branch to merge into, without starting the
	// heaven's API server.
	// Ephemeral says whether a resource ("<group or core>/<resource>") is
	// stored outside git; those never merge.
	Open      func(ctx context.Context, name string) (gitstore.MergeTarget, error)
	Ephemeral func(resource string) bool
}

// Controller reconciles AutomatedMerge objects.
type Controller struct {
	client   dynamic.NamespaceableResourceInterface
	factory  dynamicinformer.DynamicSharedInformerFactory
	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	branches Branches
	events   record.EventBroadcaster
	recorder record.EventRecorder

	// attempts remembers, per AutomatedMerge and source, the heads of the
	// last merge attempt that wrote nothing (up to date, no change, or
	// blocked), so that the same attempt is not made, and reported, again.
	mu       sync.Mutex
	attempts map[attemptKey]attempt
}

type attemptKey struct{ merge, source string }

type attempt struct {
	generation     int64
	source, target plumbing.Hash
}

// Indexes of the informer: AutomatedMerges by source and by target heaven.
const (
	bySource = "source"
	byTarget = "target"
)

// New builds the controller over the root heaven's clients.
func New(client dynamic.Interface, kube kubernetes.Interface, branches Branches) *Controller {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	c := &Controller{
		client:   client.Resource(v1alpha1.AutomatedMergesResource),
		factory:  factory,
		informer: factory.ForResource(v1alpha1.AutomatedMergesResource).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// A target that keeps moving under a merge, or a store error:
			// retry soon, and at least every 10s.
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "automatedmerge"}),
		branches: branches,
		// client-go's defaults drop an object's events after 25 (then one
		// per 5 minutes) and fold similar ones after 10: a merge and each
		// of its conflicts is an event, and merges can be frequent.
		events:   record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 500, QPS: 10, MaxEvents: 100})),
		attempts: map[attemptKey]attempt{},
	}
	c.recorder = c.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ControllerName})
	if kube != nil {
		c.events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	}
	_ = c.informer.AddIndexers(cache.Indexers{
		bySource: func(obj any) ([]string, error) {
			srcs, _, _ := unstructured.NestedStringSlice(obj.(*unstructured.Unstructured).Object, "spec", "sources")
			return srcs, nil
		},
		byTarget: func(obj any) ([]string, error) {
			t, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "target")
			return []string{t}, nil
		},
	})
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		// Only a new spec (or a deletion) calls for a merge now: the
		// controller's own status updates do not, or an interval trigger
		// would fire on every merge.
		UpdateFunc: func(old, obj any) {
			o, n := old.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if o.GetGeneration() != n.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) {
				enqueue(obj)
			}
		},
		DeleteFunc: enqueue,
	})
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	defer c.events.Shutdown()
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.informer.HasSynced) {
		return
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
}

// BranchMoved is told that heaven branch's head moved (gitstore's
// Options.OnHead): AutomatedMerges that merge from it run now. Those that
// merge into it run too while they are blocked by a conflict, which a write
// to the target may have resolved. It never blocks.
func (c *Controller) BranchMoved(branch string) {
	idx := c.informer.GetIndexer()
	if objs, err := idx.ByIndex(bySource, branch); err == nil {
		for _, obj := range objs {
			u := obj.(*unstructured.Unstructured)
			if onChange, found, _ := unstructured.NestedBool(u.Object, "spec", "trigger", "onChange"); !found || onChange {
				c.queue.Add(u.GetName())
			}
		}
	}
	if objs, err := idx.ByIndex(byTarget, branch); err == nil {
		for _, obj := range objs {
			if u := obj.(*unstructured.Unstructured); isBlocked(u) {
				c.queue.Add(u.GetName())
			}
		}
	}
}

func isBlocked(u *unstructured.Unstructured) bool {
	sources, _, _ := unstructured.NestedSlice(u.Object, "status", "sources")
	for _, s := range sources {
		if m, ok := s.(map[string]any); ok && m["blocked"] == true {
			return true
		}
	}
	return false
}

func (c *Controller) worker(ctx context.Context) {
	for c.next(ctx) {
	}
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues("automatedMerge", key)
	resync, err := c.reconcile(klog.NewContext(ctx, logger), key)
	if err != nil {
		logger.V(2).Info("Reconciling failed, will retry", "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	if resync > 0 {
		c.queue.AddAfter(key, resync)
	}
	return true
}

// remembered says whether the last attempt for (merge, source) was made at
// the same heads and generation, and wrote nothing.
func (c *Controller) remembered(k attemptKey, a attempt) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts[k] == a
}

func (c *Controller) remember(k attemptKey, a *attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a == nil {
		delete(c.attempts, k)
	} else {
		c.attempts[k] = *a
	}
}

// forget drops what is remembered of a merge that is gone.
func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.attempts {
		if k.merge == name {
			delete(c.attempts, k)
		}
	}
}
