package namespacedeletion

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/ptr"
)

// newReconciler wires the reconciler to the heaven's API.
func newReconciler(client kubernetes.Interface, meta metadata.Interface) *reconciler {
	return &reconciler{
		discover: func(context.Context) ([]resource, error) {
			return discoverResources(client.Discovery())
		},
		deleteAll: func(ctx context.Context, r resource, namespace string) (int, error) {
			return deleteAll(ctx, meta, r, namespace)
		},
		finalize: func(ctx context.Context, ns *corev1.Namespace) error {
			_, err := client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		},
	}
}

// discoverResources lists the namespaced resources that can be listed and
// deleted, tolerating groups whose discovery failed (reported as the error).
func discoverResources(d discovery.DiscoveryInterface) ([]resource, error) {
	lists, err := d.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var out []resource
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists) {
		gv, parseErr := schema.ParseGroupVersion(list.GroupVersion)
		if parseErr != nil {
			continue
		}
		for _, r := range list.APIResources {
			out = append(out, resource{gvr: gv.WithResource(r.Name), deleteCollection: slices.Contains(r.Verbs, "deletecollection")})
		}
	}
	return out, err
}

// deleteAll deletes r's objects in namespace and returns how many remain.
func deleteAll(ctx context.Context, meta metadata.Interface, r resource, namespace string) (int, error) {
	client := meta.Resource(r.gvr).Namespace(namespace)
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	if r.deleteCollection {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
			return 0, err
		}
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	remaining := 0
	for _, item := range list.Items {
		if item.DeletionTimestamp == nil {
			err := client.Delete(ctx, item.Name, opts)
			if err != nil && !apierrors.IsNotFound(err) {
				return 0, err
			}
		}
		remaining++
	}
	return remaining, nil
}
