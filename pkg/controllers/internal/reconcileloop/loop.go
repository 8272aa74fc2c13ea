// Package reconcileloop is the half that every controller of heaven-server
// shares: a rate-limited queue of object keys fed by informers, workers
// that reconcile one key at a time, the retry rule (an error retries with
// the queue's backoff, success forgets the key and may ask to be looked at
// again later), and an event recorder for controllers whose events come in
// bursts. What a controller adds is its informers, its handlers and its
// reconcile function.
package reconcileloop

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	heavenscheme "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/scheme"
)

// Func reconciles the object of key. An error retries the key with the
// queue's backoff; otherwise after > 0 looks at the key again after that
// long (a resync or a poll), 0 waits for the next event.
type Func func(ctx context.Context, key string) (after time.Duration, err error)

// Options name a loop and set its backoff.
type Options struct {
	// Name is the queue's name (its metrics) and the controller's in logs.
	Name string
	// KeyName is the name of the key in log lines ("heaven", "syncTarget").
	KeyName string
	// RateLimiter is the backoff of failed keys (default: client-go's
	// controller default, 5ms to 1000s per key and 10 qps overall).
	RateLimiter workqueue.TypedRateLimiter[string]
}

// Loop is a queue of keys and the workers that reconcile them.
type Loop struct {
	opts      Options
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile Func
}

// New returns a loop that reconciles keys with reconcile once Run.
func New(opts Options, reconcile Func) *Loop {
	if opts.RateLimiter == nil {
		opts.RateLimiter = workqueue.DefaultTypedControllerRateLimiter[string]()
	}
	return &Loop{
		opts:      opts,
		queue:     workqueue.NewTypedRateLimitingQueueWithConfig(opts.RateLimiter, workqueue.TypedRateLimitingQueueConfig[string]{Name: opts.Name}),
		reconcile: reconcile,
	}
}

// Backoff is the usual rate limiter of a loop whose failures are another
// side's (a store, a remote, a cluster): exponential per key from base to
// max, with no overall limit.
func Backoff(base, max time.Duration) workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max)
}

// Queue is the loop's queue, for tests that look into it.
func (l *Loop) Queue() workqueue.TypedRateLimitingInterface[string] { return l.queue }

// Add queues key now.
func (l *Loop) Add(key string) { l.queue.Add(key) }

// AddAfter queues key after d.
func (l *Loop) AddAfter(key string, d time.Duration) { l.queue.AddAfter(key, d) }

// Enqueue queues the key of an informer's object (namespace/name, or name
// for cluster-scoped objects; deleted objects' tombstones too): it is an
// event handler.
func (l *Loop) Enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		l.queue.Add(key)
	}
}

// Handler queues every added, updated and deleted object.
func (l *Loop) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    l.Enqueue,
		UpdateFunc: func(_, obj any) { l.Enqueue(obj) },
		DeleteFunc: l.Enqueue,
	}
}

// Run waits for synced, reconciles with workers workers until ctx ends,
// then shuts the queue down and returns once the workers have stopped.
// It returns at once, having reconciled nothing, when ctx ends before the
// caches sync.
func (l *Loop) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("controller", l.opts.Name)
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer l.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	logger.V(2).Info("Starting workers", "workers", workers)
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, l.work, time.Second) })
	}
	<-ctx.Done()
}

func (l *Loop) work(ctx context.Context) {
	for l.next(ctx) {
	}
}

func (l *Loop) next(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues(l.opts.KeyName, key)
	after, err := l.reconcile(klog.NewContext(ctx, logger), key)
	if err != nil {
		logger.V(2).Info("Reconciling failed, will retry", "err", err, "retries", l.queue.NumRequeues(key))
		l.queue.AddRateLimited(key)
		return true
	}
	l.queue.Forget(key)
	if after > 0 {
		l.queue.AddAfter(key, after)
	}
	return true
}

// BurstyEvents returns an event broadcaster, writing to kube's Events
// when kube is set, and a recorder for component, for controllers that
// report every merge and conflict: client-go's defaults drop an object's
// events after 25 (then one per 5 minutes) and fold similar ones after 10.
// The recorder knows heaven.dev's types besides Kubernetes' (objects read
// through typed clients carry no kind). Shut the broadcaster down when the
// controller stops.
func BurstyEvents(kube kubernetes.Interface, component string) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{BurstSize: 500, QPS: 10, MaxEvents: 100}))
	if kube != nil {
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: kube.CoreV1().Events("")})
	}
	return b, b.NewRecorder(eventScheme, corev1.EventSource{Component: component})
}

// eventScheme names the kinds of the objects events are about.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(heavenscheme.AddToScheme(s))
	return s
}()
