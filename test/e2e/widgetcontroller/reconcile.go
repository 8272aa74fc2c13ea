package widgetcontroller

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// reconcile makes Widget key's status report its spec as it is in the
// cache. It compares the whole status, not only observedGeneration: a
// merge can bring a spec, or a status, without a new generation.
func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx)
	cached, err := c.get(key)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Widget is gone")
		return nil
	}
	if err != nil {
		return err
	}
	want := Desired(cached)
	if StatusOf(cached) == want {
		logger.V(4).Info("Status is up to date")
		return nil
	}
	w := cached.DeepCopy()
	if err := setStatus(w, want); err != nil {
		return err
	}
	if err := c.updateStatus(ctx, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	c.writes.Add(1)
	logger.V(2).Info("Reported status", "observedSize", want.ObservedSize, "observedGeneration", want.ObservedGeneration)
	return nil
}
