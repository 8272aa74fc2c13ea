package syncer

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// deletionRecheck is how soon a key whose downstream copy is being
// deleted is looked at again if no event comes first.
const deletionRecheck = 2 * time.Second

// notOwnedError says that the cluster has an object (or namespace) of the
// name the syncer needs, which the syncer did not create.
type notOwnedError struct{ what string }

func (e *notOwnedError) Error() string {
	return e.what + " exists in the physical cluster without this syncer's owner labels; it is left alone"
}

// objectSync is one reconciliation of one key: both sides' objects (from
// the caches) and clients scoped to their namespaces.
type objectSync struct {
	s          *Syncer
	t          *syncedType
	key        objectKey
	up, down   *unstructured.Unstructured
	upClient   dynamic.ResourceInterface
	downClient dynamic.ResourceInterface
	downNS     string
}

// reconcileObject makes the cluster match the heaven for key. It returns
// how soon to look again (0: when an event says so).
//
// The decision is level-based, from the heaven's object alone:
//   - gone: delete an owned downstream copy (an orphan);
//   - labelled for the target and not being deleted: hold the finalizer,
//     apply the copy down, copy status up;
//   - otherwise (label changed or removed, or being deleted): delete the
//     downstream copy, and release the finalizer once it is gone.
func (s *Syncer) reconcileObject(ctx context.Context, key objectKey) (time.Duration, error) {
	t := s.typeFor(key.gr)
	if t == nil {
		return 0, nil // no longer synced
	}
	if !t.synced() {
		return notSyncedRetry, nil
	}
	o := &objectSync{s: s, t: t, key: key, downNS: s.id.locator(key.namespace).Name()}
	o.up = fromStore(t.up, key.namespace, key.name)
	o.down = fromStore(t.down, o.downNS, key.name)
	o.upClient = s.up.dynamic.Resource(t.gvr).Namespace(key.namespace)
	o.downClient = s.down.dynamic.Resource(t.gvr).Namespace(o.downNS)

	switch {
	case o.up == nil:
		return o.deleteOrphan(ctx)
	case s.id.selected(o.up) && o.up.GetDeletionTimestamp() == nil:
		return 0, o.sync(ctx)
	default:
		return o.unsync(ctx)
	}
}

// sync holds the finalizer, applies the copy down and copies status up.
func (o *objectSync) sync(ctx context.Context) error {
	if !o.s.id.hasFinalizer(o.up) {
		o.up.SetFinalizers(append(o.up.GetFinalizers(), o.s.id.finalizer()))
		up, err := o.upClient.Update(ctx, o.up, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("adding finalizer: %w", err)
		}
		o.s.countWrite(o.key, "finalizer")
		o.up = up
	}
	if err := o.s.ensureNamespace(ctx, o.key.namespace); err != nil {
		return err
	}
	if err := o.ensureDown(ctx); err != nil {
		return err
	}
	if o.down == nil || !o.t.hasStatus {
		return nil
	}
	return o.statusUp(ctx)
}

// ensureDown applies the copy down unless the cluster already has what it
// would send (same hash), so that the cluster's own defaulting and
// controllers never trigger writes: the downstream object's
// resourceVersion stays put after convergence.
func (o *objectSync) ensureDown(ctx context.Context) error {
	desired := downstreamObject(o.s.id, o.up, o.downNS)
	if o.down == nil {
		// The cache only holds owned objects: look for one the syncer did
		// not create before creating anything.
		live, err := o.downClient.Get(ctx, o.key.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return err
		case !o.s.id.owns(live):
			return &notOwnedError{what: fmt.Sprintf("%s %s/%s", o.key.gr, o.downNS, o.key.name)}
		default:
			o.down = live
		}
	}
	if o.down != nil && o.down.GetDeletionTimestamp() != nil {
		return fmt.Errorf("the copy in the physical cluster is being deleted; waiting to recreate it")
	}
	if o.down != nil && upToDate(o.down, desired) {
		return nil
	}
	down, err := o.downClient.Apply(ctx, o.key.name, desired, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return fmt.Errorf("applying to the physical cluster: %w", err)
	}
	o.s.countWrite(o.key, "apply")
	klog.FromContext(ctx).V(2).Info("Applied downstream", "downstreamNamespace", o.downNS, "resourceVersion", down.GetResourceVersion())
	o.down = down
	return nil
}

// statusUp writes the cluster's status to the heaven's object when it
// differs.
func (o *objectSync) statusUp(ctx context.Context) error {
	st, ok := upstreamStatus(o.up, o.down)
	if !ok {
		return nil
	}
	if old, _, _ := unstructured.NestedFieldNoCopy(o.up.Object, "status"); equalJSON(old, st) {
		return nil
	}
	o.up.Object["status"] = st
	if _, err := o.upClient.UpdateStatus(ctx, o.up, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status in the heaven: %w", err)
	}
	o.s.countWrite(o.key, "status")
	klog.FromContext(ctx).V(2).Info("Updated upstream status")
	return nil
}

// unsync deletes the downstream copy of an object that is no longer
// labelled for the target or is being deleted, waits until the copy is
// gone, and then releases the finalizer.
func (o *objectSync) unsync(ctx context.Context) (time.Duration, error) {
	if gone, err := o.deleteDown(ctx); err != nil || !gone {
		return deletionRecheck, err
	}
	if !o.s.id.hasFinalizer(o.up) {
		return 0, nil
	}
	var keep []string
	for _, f := range o.up.GetFinalizers() {
		if f != o.s.id.finalizer() {
			keep = append(keep, f)
		}
	}
	o.up.SetFinalizers(keep)
	if _, err := o.upClient.Update(ctx, o.up, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("removing finalizer: %w", err)
	}
	o.s.countWrite(o.key, "finalizer")
	klog.FromContext(ctx).V(2).Info("Released upstream object", "deleting", o.up.GetDeletionTimestamp() != nil)
	return 0, nil
}

// deleteOrphan deletes a downstream copy whose heaven object is gone (its
// finalizer was removed by someone else, or the syncer was not running).
func (o *objectSync) deleteOrphan(ctx context.Context) (time.Duration, error) {
	if o.down == nil {
		return 0, nil
	}
	// The cache may lag behind a create: ask the heaven.
	if _, err := o.upClient.Get(ctx, o.key.name, metav1.GetOptions{}); err == nil {
		return deletionRecheck, nil
	} else if !apierrors.IsNotFound(err) {
		return 0, err
	}
	gone, err := o.deleteDown(ctx)
	if err != nil || !gone {
		return deletionRecheck, err
	}
	return 0, nil
}

// deleteDown deletes the owned downstream copy and reports whether it is
// gone. When the cache has none it asks the cluster, so that the finalizer
// is never released while a copy exists.
func (o *objectSync) deleteDown(ctx context.Context) (gone bool, err error) {
	down := o.down
	if down == nil {
		live, err := o.downClient.Get(ctx, o.key.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, err
		case !o.s.id.owns(live):
			return true, nil // not ours: nothing of ours to delete
		}
		down = live
	}
	if down.GetDeletionTimestamp() != nil {
		return false, nil
	}
	uid := down.GetUID()
	policy := metav1.DeletePropagationBackground
	err = o.downClient.Delete(ctx, o.key.name, metav1.DeleteOptions{
		Preconditions:     &metav1.Preconditions{UID: &uid},
		PropagationPolicy: &policy,
	})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case apierrors.IsConflict(err):
		return false, nil // another object of that name now: look again
	case err != nil:
		return false, fmt.Errorf("deleting from the physical cluster: %w", err)
	}
	o.s.countWrite(o.key, "delete")
	klog.FromContext(ctx).V(2).Info("Deleted downstream", "downstreamNamespace", o.downNS)
	// Gone unless finalizers hold it; the delete event brings the key back.
	live, err := o.downClient.Get(ctx, o.key.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && live.GetUID() != uid) {
		return true, nil
	}
	return false, nil
}

func (s *Syncer) countWrite(key objectKey, write string) {
	writesMetric.WithLabelValues(s.id.heaven, s.id.target, key.gr.String(), write).Inc()
}
