package syncer

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Downstream namespaces are created on demand and deleted once the heaven's
// namespace is gone (or being deleted) and no object of the syncer is left
// in them. The namespace queue is keyed by the heaven's namespace name; it
// is fed by the heaven's namespace deletions, by deletions of owned
// downstream objects, and by every owned downstream namespace on start (so
// that namespaces deleted in the heaven while no syncer ran are found).

// namespaceGCRetry is how soon a namespace is looked at again while the
// informers it depends on are still listing.
const namespaceGCRetry = time.Second

func (s *Syncer) addNamespaceGCHandlers() {
	_, _ = s.upNamespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
				s.nsQueue.Add(ns.Name)
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if ns, ok := obj.(*corev1.Namespace); ok {
				s.nsQueue.Add(ns.Name)
			}
		},
	})
	_, _ = s.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.Labels[UpstreamNamespaceLabel] != "" {
				s.nsQueue.Add(ns.Labels[UpstreamNamespaceLabel])
			}
		},
	})
}

func (s *Syncer) runNamespaceWorker(ctx context.Context) {
	for s.processNextNamespace(ctx) {
	}
}

func (s *Syncer) processNextNamespace(ctx context.Context) bool {
	ns, quit := s.nsQueue.Get()
	if quit {
		return false
	}
	defer s.nsQueue.Done(ns)
	retry, err := s.reconcileNamespace(ctx, ns)
	switch {
	case err != nil:
		klog.FromContext(ctx).V(2).Info("Cleaning up downstream namespace failed, will retry", "upstreamNamespace", ns, "err", err)
		s.nsQueue.AddRateLimited(ns)
	case retry:
		s.nsQueue.Forget(ns)
		s.nsQueue.AddAfter(ns, namespaceGCRetry)
	default:
		s.nsQueue.Forget(ns)
	}
	return true
}

// reconcileNamespace deletes the downstream namespace of heaven namespace
// ns if ns is gone or terminating and nothing of the syncer is left in it.
func (s *Syncer) reconcileNamespace(ctx context.Context, ns string) (retry bool, err error) {
	if !s.upNamespaces.HasSynced() || !s.typesReconciled.Load() {
		return true, nil
	}
	if obj, ok, _ := s.upNamespaces.GetStore().GetByKey(ns); ok && obj.(*corev1.Namespace).DeletionTimestamp == nil {
		return false, nil
	}
	name := s.id.locator(ns).Name()
	obj, ok, _ := s.namespaces.GetStore().GetByKey(name)
	if !ok {
		return false, nil
	}
	down := obj.(*corev1.Namespace)
	if down.DeletionTimestamp != nil {
		return false, nil
	}
	s.mu.RLock()
	for _, t := range s.types {
		if !t.synced() {
			s.mu.RUnlock()
			return true, nil
		}
		if objs, _ := t.down.GetIndexer().ByIndex(cache.NamespaceIndex, name); len(objs) > 0 {
			s.mu.RUnlock()
			return false, nil // their deletions bring ns back
		}
	}
	s.mu.RUnlock()
	uid := down.UID
	err = s.down.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	klog.FromContext(ctx).V(2).Info("Deleted downstream namespace", "downstreamNamespace", name, "upstreamNamespace", ns)
	return false, nil
}
