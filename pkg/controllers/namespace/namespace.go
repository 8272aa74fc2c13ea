// Package namespace runs Kubernetes' namespace controller
// (k8s.io/kubernetes/pkg/controller/namespace, as kube-controller-manager
// runs it) in a heaven: a namespace being deleted loses its content, then
// its "kubernetes" finalizer, and goes.
package namespace

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	namespacecontroller "k8s.io/kubernetes/pkg/controller/namespace"
)

const (
	// resync is kube-controller-manager's --namespace-sync-period.
	resync = 5 * time.Minute
	// workers is fewer than kube-controller-manager's 10: a heaven has
	// few namespaces, and many heavens share one process.
	workers = 2
)

// Run runs the controller over namespaces (the heaven's shared informer)
// until ctx ends; it returns once the controller is started.
func Run(ctx context.Context, kube kubernetes.Interface, meta metadata.Interface, namespaces coreinformers.NamespaceInformer) {
	c := namespacecontroller.NewNamespaceController(ctx, kube, meta, kube.Discovery().ServerPreferredNamespacedResources,
		namespaces, resync, corev1.FinalizerKubernetes)
	go c.Run(ctx, workers)
}
