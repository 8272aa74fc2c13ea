package syncer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// objectKey names an object by its heaven coordinates. Events of both
// sides enqueue the same key; the reconciler looks at both and decides.
type objectKey struct {
	gr              schema.GroupResource
	namespace, name string
}

func (k objectKey) String() string {
	return fmt.Sprintf("%s %s/%s", k.gr, k.namespace, k.name)
}

// syncedType is a resource being synced: where it is served and the
// informers of both sides.
type syncedType struct {
	typeInfo
	up, down cache.SharedIndexInformer
	cancel   context.CancelFunc
	done     chan struct{} // closed when both informers have stopped
}

func (t *syncedType) synced() bool { return t.up.HasSynced() && t.down.HasSynced() }

// notSyncedRetry is how soon a key is looked at again while the informers
// of its type are still listing.
const notSyncedRetry = 200 * time.Millisecond

// maxUnreachableRetry bounds the backoff of a key that failed because a
// side did not answer (or answered that it is unavailable or overloaded).
// The queue's own backoff doubles up to many minutes; bounded, every such
// key is retried within this long of the side coming back, however long it
// was away.
const maxUnreachableRetry = 10 * time.Second

// startType starts the informers of a resource: every object of it in the
// heaven (the label filter is applied by the event handlers, so that a
// removed label is seen), and only the objects this syncer owns in the
// cluster.
func (s *Syncer) startType(ctx context.Context, info typeInfo) *syncedType {
	ctx, cancel := context.WithCancel(ctx)
	t := &syncedType{typeInfo: info, cancel: cancel, done: make(chan struct{})}
	t.up = dynamicinformer.NewFilteredDynamicInformer(s.up.dynamic, info.gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	t.down = dynamicinformer.NewFilteredDynamicInformer(s.down.dynamic, info.gvr, metav1.NamespaceAll, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		func(o *metav1.ListOptions) { o.LabelSelector = s.id.ownerSelector() }).Informer()
	for _, inf := range []cache.SharedIndexInformer{t.up, t.down} {
		_ = inf.SetTransform(dropManagedFields)
	}
	gr := info.gvr.GroupResource()
	_, _ = t.up.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.enqueueUpstream(gr, obj) },
		// The old object matters too: a removed label must be seen.
		UpdateFunc: func(old, obj any) { s.enqueueUpstream(gr, old, obj) },
		DeleteFunc: func(obj any) { s.enqueueUpstream(gr, obj) },
	})
	enqueueDown := func(obj any) { s.enqueueDownstream(gr, obj) }
	_, _ = t.down.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueDown,
		UpdateFunc: func(_, obj any) { enqueueDown(obj) },
		DeleteFunc: func(obj any) {
			enqueueDown(obj)
			if u, ok := asUnstructured(obj); ok {
				if ns := u.GetAnnotations()[UpstreamNamespaceAnnotation]; ns != "" {
					s.nsQueue.Add(ns) // maybe the last object of a namespace gone upstream
				}
			}
		},
	})
	go func() {
		defer close(t.done)
		doneUp := make(chan struct{})
		go func() { defer close(doneUp); t.up.RunWithContext(ctx) }()
		t.down.RunWithContext(ctx)
		<-doneUp
	}()
	klog.FromContext(ctx).V(2).Info("Syncing resource", "resource", gr, "version", info.gvr.Version, "source", info.source)
	return t
}

// stop stops the informers and waits for them.
func (t *syncedType) stop() {
	t.cancel()
	<-t.done
}

// stopTypes stops every type's informers.
func (s *Syncer) stopTypes() {
	s.mu.Lock()
	types := s.types
	s.types = map[schema.GroupResource]*syncedType{}
	s.mu.Unlock()
	for _, t := range types {
		t.stop()
	}
}

// dropManagedFields keeps managed fields out of the caches: the syncer
// never reads them.
func dropManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u.SetManagedFields(nil)
	}
	return obj, nil
}

// relevantUpstream reports whether a heaven object concerns this syncer:
// labelled for its target, or still carrying its finalizer.
func (s *Syncer) relevantUpstream(obj any) bool {
	u, ok := asUnstructured(obj)
	return ok && (s.id.selected(u) || s.id.hasFinalizer(u))
}

// enqueueUpstream enqueues the key of a heaven object if any of the
// versions given of it is relevant.
func (s *Syncer) enqueueUpstream(gr schema.GroupResource, versions ...any) {
	for _, obj := range versions {
		if u, ok := asUnstructured(obj); ok && s.relevantUpstream(u) {
			s.queue.Add(objectKey{gr: gr, namespace: u.GetNamespace(), name: u.GetName()})
			return
		}
	}
}

// enqueueDownstream maps an owned cluster object back to its heaven key.
func (s *Syncer) enqueueDownstream(gr schema.GroupResource, obj any) {
	u, ok := asUnstructured(obj)
	if !ok {
		return
	}
	ns, ok := u.GetAnnotations()[UpstreamNamespaceAnnotation]
	if !ok || s.id.locator(ns).Name() != u.GetNamespace() {
		return // not one of ours, or moved: nothing maps it back
	}
	s.queue.Add(objectKey{gr: gr, namespace: ns, name: u.GetName()})
}

// asUnstructured unwraps tombstones.
func asUnstructured(obj any) (*unstructured.Unstructured, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

func (s *Syncer) runObjectWorker(ctx context.Context) {
	for s.processNextObject(ctx) {
	}
}

func (s *Syncer) processNextObject(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	logger := klog.FromContext(ctx).WithValues("resource", key.gr.String(), "namespace", key.namespace, "name", key.name)
	ctx = klog.NewContext(ctx, logger)

	started := time.Now()
	after, err := s.reconcileObject(ctx, key)
	labels := []string{s.id.heaven, s.id.target, key.gr.String()}
	reconcileDurationMetric.WithLabelValues(labels...).Observe(time.Since(started).Seconds())
	if apierrors.IsConflict(err) {
		// A write based on a stale cache: not a failure, try again.
		logger.V(4).Info("Conflict, will retry", "err", err)
		reconcilesMetric.WithLabelValues(append(labels, "conflict")...).Inc()
		s.queue.AddRateLimited(key)
		return true
	}
	if err != nil {
		reconcilesMetric.WithLabelValues(append(labels, "error")...).Inc()
		s.recordFailure(ctx, key, err)
		s.queue.AddRateLimited(key)
		if unreachable(err) {
			// AddRateLimited counts the failure, AddAfter bounds the wait:
			// a key waiting in the queue is taken back at the earlier of
			// the two.
			s.queue.AddAfter(key, maxUnreachableRetry)
		}
		return true
	}
	reconcilesMetric.WithLabelValues(append(labels, "success")...).Inc()
	s.clearFailure(key)
	s.queue.Forget(key)
	if after > 0 {
		s.queue.AddAfter(key, after)
	}
	return true
}

// unreachable reports whether err says that a side could not be reached
// or could not serve the request for now, rather than that it refused the
// request.
func unreachable(err error) bool {
	if apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) {
		return true
	}
	// Transport failures (refused, reset, timed out, TLS) come as
	// *url.Error, a net.Error.
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, context.DeadlineExceeded) || utilnet.IsProbableEOF(err)
}

// recordFailure logs a failed reconciliation, remembers it for the
// SyncTarget's status and reports it as a Warning event on the heaven's
// object.
func (s *Syncer) recordFailure(ctx context.Context, key objectKey, err error) {
	klog.FromContext(ctx).V(2).Info("Syncing failed, will retry", "err", err, "retries", s.queue.NumRequeues(key))
	s.mu.Lock()
	s.failures[key] = err.Error()
	s.mu.Unlock()
	up := s.cachedUpstream(key)
	if up == nil {
		return
	}
	reason := "SyncFailed"
	var notOwned *notOwnedError
	if errors.As(err, &notOwned) {
		reason = "NotOwned"
	}
	s.recorder.Eventf(up, "Warning", reason, "Syncing to %s: %v", s.id.target, err)
}

func (s *Syncer) clearFailure(key objectKey) {
	s.mu.Lock()
	delete(s.failures, key)
	s.mu.Unlock()
}

// cachedUpstream is the heaven's object of key from the cache, nil if
// none.
func (s *Syncer) cachedUpstream(key objectKey) *unstructured.Unstructured {
	t := s.typeFor(key.gr)
	if t == nil {
		return nil
	}
	return fromStore(t.up, key.namespace, key.name)
}

// fromStore is a copy of the cached object namespace/name, nil if none.
func fromStore(inf cache.SharedIndexInformer, namespace, name string) *unstructured.Unstructured {
	obj, ok, err := inf.GetStore().GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return u.DeepCopy()
}

func (s *Syncer) typeFor(gr schema.GroupResource) *syncedType {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.types[gr]
}
