package namespacedeletion

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// resource is one namespaced resource to empty.
type resource struct {
	gvr schema.GroupVersionResource
	// deleteCollection says the resource serves deletecollection; otherwise
	// its objects are deleted one by one.
	deleteCollection bool
}

// reconciler's dependencies are function fields so tests can use closures.
type reconciler struct {
	// discover returns the namespaced resources to empty. With a partial
	// failure it returns what it found and the error.
	discover func(ctx context.Context) ([]resource, error)
	// deleteAll deletes every object of r in namespace and returns how many
	// remain afterwards (those still being finalized).
	deleteAll func(ctx context.Context, r resource, namespace string) (remaining int, err error)
	// finalize writes ns's spec.finalizers through the finalize subresource.
	finalize func(ctx context.Context, ns *corev1.Namespace) error
}

// contentRemainingError says objects are still going; the namespace is
// retried until they are gone.
type contentRemainingError struct{ count int }

func (e *contentRemainingError) Error() string {
	return fmt.Sprintf("%d objects remain in the namespace", e.count)
}

// reconcile empties a terminating namespace and then removes its
// "kubernetes" finalizer. ns is the caller's copy.
func (r *reconciler) reconcile(ctx context.Context, ns *corev1.Namespace) error {
	if ns.DeletionTimestamp == nil || !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		klog.FromContext(ctx).V(4).Info("Skipping namespace: not terminating or already finalized")
		return nil
	}
	resources, discoveryErr := r.discover(ctx)
	remaining, err := r.deleteContent(ctx, resources, ns.Name)
	if err := errors.Join(discoveryErr, err); err != nil {
		// Never finalize with a group unseen: its objects would be orphaned.
		return err
	}
	if remaining > 0 {
		return &contentRemainingError{count: remaining}
	}
	ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool {
		return f == corev1.FinalizerKubernetes
	})
	if err := r.finalize(ctx, ns); err != nil {
		return fmt.Errorf("finalize namespace %s: %w", ns.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Finalized namespace")
	return nil
}

// deleteContent deletes the objects of every resource and counts what remains.
func (r *reconciler) deleteContent(ctx context.Context, resources []resource, namespace string) (int, error) {
	total := 0
	var errs []error
	for _, res := range resources {
		n, err := r.deleteAll(ctx, res, namespace)
		if err != nil {
			errs = append(errs, fmt.Errorf("delete %s in %s: %w", res.gvr, namespace, err))
			continue
		}
		total += n
	}
	return total, errors.Join(errs...)
}
