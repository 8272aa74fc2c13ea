package syncer

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// ensureNamespace makes sure the downstream namespace of heaven namespace
// ns exists and is this syncer's: created on demand with the owner labels,
// the heaven's namespace in a label and the full locator in an annotation.
// A namespace of that name that the syncer did not create is never used.
func (s *Syncer) ensureNamespace(ctx context.Context, ns string) error {
	loc := s.id.locator(ns)
	name := loc.Name()
	if obj, ok, _ := s.namespaces.GetStore().GetByKey(name); ok {
		return usableNamespace(obj.(*corev1.Namespace), loc)
	}
	client := s.down.kube.CoreV1().Namespaces()
	existing, err := client.Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return s.checkNamespace(existing, loc)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	labels := s.id.ownerLabels()
	labels[UpstreamNamespaceLabel] = ns
	created, err := client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Labels:      labels,
		Annotations: map[string]string{NamespaceLocatorAnnotation: string(loc.json())},
	}}, metav1.CreateOptions{FieldManager: FieldManager})
	if apierrors.IsAlreadyExists(err) {
		if created, err = client.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		return s.checkNamespace(created, loc)
	}
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created downstream namespace", "downstreamNamespace", name, "upstreamNamespace", ns)
	return nil
}

func (s *Syncer) checkNamespace(ns *corev1.Namespace, loc NamespaceLocator) error {
	if ns.Labels[HeavenLabel] != s.id.heaven || ns.Labels[SyncTargetLabel] != s.id.target {
		return &notOwnedError{what: "namespace " + ns.Name}
	}
	return usableNamespace(ns, loc)
}

// usableNamespace checks an owned namespace: it stands for loc and is not
// being deleted.
func usableNamespace(ns *corev1.Namespace, loc NamespaceLocator) error {
	if got := ns.Annotations[NamespaceLocatorAnnotation]; got != string(loc.json()) {
		return fmt.Errorf("namespace %s has locator %q, want %q", ns.Name, got, loc.json())
	}
	if ns.DeletionTimestamp != nil {
		return fmt.Errorf("namespace %s is being deleted; waiting to recreate it", ns.Name)
	}
	return nil
}
