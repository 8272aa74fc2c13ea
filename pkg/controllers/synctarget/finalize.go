package synctarget

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// ErrNoHeaven is what Deps.Heaven returns for a heaven that does not
// exist and may not be started: it has no objects to release.
var ErrNoHeaven = errors.New("no such heaven")

// uninstallRecheck is how soon a SyncTarget being deleted is looked at
// again while its syncer's namespace is being deleted.
const uninstallRecheck = 2 * time.Second

// finalize runs when a SyncTarget is being deleted: it uninstalls the
// syncer (and deletes the namespaces the syncer created, with the copies
// in them), waits until the syncer is gone, releases the heaven's objects
// from the syncer's finalizer, and then lets the SyncTarget go. st is a
// copy of cached, the SyncTarget as stored, to change.
func (c *Controller) finalize(ctx context.Context, cached, st *v1alpha1.SyncTarget) (time.Duration, error) {
	if !hasFinalizer(st) {
		return 0, nil
	}
	c.forget(st.Name)
	if st.Spec.KubeconfigSecretRef != nil {
		gone, err := c.uninstall(ctx, st)
		if err != nil || !gone {
			msg := fmt.Sprintf("waiting for namespace %s of the physical cluster to be deleted", install.Namespace(st.Name))
			if err != nil {
				msg = "uninstalling: " + err.Error()
			}
			meta.SetStatusCondition(&st.Status.Conditions, condition(st, v1alpha1.SyncTargetInstalled, metav1.ConditionFalse, ReasonUninstalling, msg))
			if statusErr := c.updateStatus(ctx, cached, st); statusErr != nil && err == nil {
				err = statusErr
			}
			return uninstallRecheck, err
		}
	}
	if err := c.release(ctx, st); err != nil {
		return 0, fmt.Errorf("releasing the objects of heaven %s: %w", st.Spec.Heaven, err)
	}
	// The credential it was given is valid for a long time, and a syncer
	// left running where the cluster could not be reached must not keep
	// using it.
	if c.deps.Revoke != nil {
		if err := c.deps.Revoke(pki.SyncerUser(st.Spec.Heaven, st.Name)); err != nil {
			return 0, fmt.Errorf("revoking the syncer's credential: %w", err)
		}
	}
	st.Finalizers = without(st.Finalizers, v1alpha1.SyncTargetFinalizer)
	if _, err := c.client.Update(ctx, st, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Released SyncTarget")
	return 0, nil
}

// uninstall deletes what install created and reports whether the syncer
// is gone (its namespace deleted); once it is, it deletes the namespaces
// the syncer created for the heaven (so no copy is left behind without a
// syncer). A cluster that cannot be reached for want of a kubeconfig is
// left as it is.
func (c *Controller) uninstall(ctx context.Context, st *v1alpha1.SyncTarget) (bool, error) {
	logger := klog.FromContext(ctx)
	kubeconfig, err := c.kubeconfigOf(st.Spec.KubeconfigSecretRef)
	if err != nil {
		logger.Info("Cannot reach the physical cluster to uninstall the syncer; leaving it there", "err", err)
		return true, nil
	}
	cluster, err := c.deps.Connect(kubeconfig)
	if err != nil {
		logger.Info("Cannot reach the physical cluster to uninstall the syncer; leaving it there", "err", err)
		return true, nil
	}
	for _, o := range install.Installed(st.Name) {
		if err := deleteIfPresent(ctx, cluster.Resource(o.Resource), o.GetName()); err != nil {
			return false, fmt.Errorf("deleting %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	namespaces := cluster.Resource(install.NamespacesResource)
	if _, err := namespaces.Get(ctx, install.Namespace(st.Name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return false, err // nil while it is being deleted
	}
	owned, err := namespaces.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{
		v1alpha1.HeavenLabel: st.Spec.Heaven, v1alpha1.SyncTargetLabel: st.Name,
	}).String()})
	if err != nil {
		return false, err
	}
	for _, ns := range owned.Items {
		if err := deleteIfPresent(ctx, namespaces, ns.GetName()); err != nil {
			return false, fmt.Errorf("deleting synced namespace %s: %w", ns.GetName(), err)
		}
	}
	logger.V(2).Info("Uninstalled the syncer", "syncedNamespaces", len(owned.Items))
	return true, nil
}

// deleteIfPresent deletes an object unless it is gone or being deleted.
func deleteIfPresent(ctx context.Context, client dynamic.ResourceInterface, name string) error {
	obj, err := client.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	policy := metav1.DeletePropagationBackground
	err = client.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// release removes the syncer's finalizer from every object of the heaven
// that still carries it, so that nothing waits for a syncer that is gone.
// It looks at every resource the SyncTarget asked for or the syncer
// reported (which includes its --resources).
func (c *Controller) release(ctx context.Context, st *v1alpha1.SyncTarget) error {
	resources := releasableResources(st)
	if len(resources) == 0 {
		return nil
	}
	cfg, done, err := c.deps.Heaven(ctx, st.Spec.Heaven)
	if errors.Is(err, ErrNoHeaven) {
		return nil
	}
	if err != nil {
		return err
	}
	defer done()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	finalizer := v1alpha1.SyncerFinalizer(st.Name)
	released := 0
	for _, gr := range resources {
		gvr, err := mapper.ResourceFor(gr.WithVersion(""))
		if meta.IsNoMatchError(err) {
			continue // the heaven does not serve it: nothing to release
		}
		if err != nil {
			return err
		}
		n, err := releaseResource(ctx, client.Resource(gvr), finalizer)
		if err != nil {
			return fmt.Errorf("%s: %w", gr, err)
		}
		released += n
	}
	klog.FromContext(ctx).V(2).Info("Released the heaven's objects", "heaven", st.Spec.Heaven, "objects", released)
	return nil
}

// releasableResources are spec.resources and the resources of
// status.resources, each once.
func releasableResources(st *v1alpha1.SyncTarget) []schema.GroupResource {
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	add := func(r string) {
		if v1alpha1.ValidateResource(r) != nil {
			return
		}
		if gr := schema.ParseGroupResource(r); !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	for _, r := range st.Spec.Resources {
		add(r)
	}
	for _, r := range st.Status.Resources {
		add(r.Resource)
	}
	return out
}

// releaseResource removes finalizer from every object of a resource,
// returning how many it changed.
func releaseResource(ctx context.Context, client dynamic.NamespaceableResourceInterface, finalizer string) (int, error) {
	list, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		obj := &list.Items[i]
		if !contains(obj.GetFinalizers(), finalizer) {
			continue
		}
		objClient := client.Namespace(obj.GetNamespace())
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			keep := without(obj.GetFinalizers(), finalizer)
			if len(keep) == len(obj.GetFinalizers()) {
				return nil
			}
			obj.SetFinalizers(keep)
			_, err := objClient.Update(ctx, obj, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				if fresh, getErr := objClient.Get(ctx, obj.GetName(), metav1.GetOptions{}); getErr == nil {
					obj = fresh
				}
			}
			return err
		})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return n, fmt.Errorf("%s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		n++
	}
	return n, nil
}

func without(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}
