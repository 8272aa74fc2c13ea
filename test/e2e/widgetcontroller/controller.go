package widgetcontroller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/dynamic/dynamiclister"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Controller reports each Widget's spec.size in its status.
type Controller struct {
	factory dynamicinformer.DynamicSharedInformerFactory
	synced  cache.DoneChecker
	queue   workqueue.TypedRateLimitingInterface[cache.ObjectName]

	// The reconciler's dependencies, function fields so that tests use
	// closures: get reads the informer's cache (never to be mutated),
	// updateStatus writes through the status subresource.
	get          func(cache.ObjectName) (*unstructured.Unstructured, error)
	updateStatus func(context.Context, *unstructured.Unstructured) error

	writes atomic.Int64
}

// New builds the controller for the API server (a heaven) cfg points at.
func New(cfg *rest.Config) (*Controller, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = Name
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	widgets := client.Resource(Resource)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	informer := factory.ForResource(Resource).Informer()
	lister := dynamiclister.New(informer.GetIndexer(), Resource)
	c := &Controller{
		factory: factory,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: Name}),
		get: func(n cache.ObjectName) (*unstructured.Unstructured, error) {
			return lister.Namespace(n.Namespace).Get(n.Name)
		},
		updateStatus: func(ctx context.Context, w *unstructured.Unstructured) error {
			_, err := widgets.Namespace(w.GetNamespace()).UpdateStatus(ctx, w, metav1.UpdateOptions{FieldManager: Name})
			return err
		},
	}
	// Every change is reconciled, the controller's own status updates
	// included: the status in the cache may be stale, or someone else's
	// (a merge), and the reconcile is a no-op when it is what it should be.
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	if err != nil {
		return nil, err
	}
	c.synced = reg.HasSyncedChecker()
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// Run reconciles with workers until ctx ends, and returns when every
// goroutine it started has stopped. It is called once.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	defer c.queue.ShutDown()
	logger := klog.FromContext(ctx)
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitFor(ctx, "widget informer", c.synced) {
		return fmt.Errorf("widget informer not synced: %w", context.Cause(ctx))
	}
	logger.Info("Starting workers", "count", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.worker, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Shutting down workers")
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

// StatusWrites is how many status updates the controller has made.
func (c *Controller) StatusWrites() int64 { return c.writes.Load() }

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
	logger := klog.FromContext(ctx).WithValues("widget", key)
	if err := c.reconcile(klog.NewContext(ctx, logger), key); err != nil {
		// A conflict is a stale cache: the newer object is on its way.
		logger.V(2).Info("Reconciling failed, will retry", "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}
