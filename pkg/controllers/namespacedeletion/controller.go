// Package namespacedeletion empties terminating namespaces of one heaven and
// then releases them, as kube-controller-manager's namespace controller does.
package namespacedeletion

import (
	"context"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/controllers/internal/reconcileloop"
)

// Name is the controller's name in logs, its queue and its user agent.
const Name = "namespace-deletion"

// Retry delays: objects with finalizers can take a while to go, so the
// backoff is capped to keep polling for them.
const (
	retryBaseDelay = 5 * time.Millisecond
	retryMaxDelay  = 30 * time.Second
)

// Controller deletes the content of terminating namespaces and then removes
// the "kubernetes" finalizer from them.
type Controller struct {
	httpClient *http.Client
	informers  informers.SharedInformerFactory // nil when the caller runs them
	lister     corelisters.NamespaceLister
	synced     cache.InformerSynced
	loop       *reconcileloop.Loop
	reconciler *reconciler
}

// New returns a controller for the heaven that cfg (its loopback config)
// reaches. With a shared informer factory, it watches namespaces through it
// (the caller starts and stops it); with nil, through one of its own.
func New(cfg *rest.Config, shared informers.SharedInformerFactory) (*Controller, error) {
	cfg = rest.CopyConfig(cfg)
	cfg = rest.AddUserAgent(cfg, Name)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	factory, own := shared, informers.SharedInformerFactory(nil)
	if factory == nil {
		factory = informers.NewSharedInformerFactory(client, 0)
		own = factory
	}
	namespaces := factory.Core().V1().Namespaces()
	c := &Controller{
		httpClient: httpClient,
		informers:  own,
		lister:     namespaces.Lister(),
		synced:     namespaces.Informer().HasSynced,
		reconciler: newReconciler(client, meta),
	}
	// Content still going is an error too: the namespace is looked at again
	// with backoff until it is empty.
	c.loop = reconcileloop.New(reconcileloop.Options{Name: Name, KeyName: "namespace",
		RateLimiter: reconcileloop.Backoff(retryBaseDelay, retryMaxDelay)},
		func(ctx context.Context, name string) (time.Duration, error) { return 0, c.sync(ctx, name) })
	_, err = namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// enqueue queues namespaces being deleted; deleted ones need nothing more.
func (c *Controller) enqueue(obj interface{}) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return
	}
	c.loop.Add(ns.Name)
}

// Run starts the informer and workers and blocks until ctx is done; when it
// returns, its goroutines have stopped. Run may be called once.
func (c *Controller) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithValues("controller", Name)
	ctx = klog.NewContext(ctx, logger)
	defer c.httpClient.CloseIdleConnections()
	if c.informers != nil {
		c.informers.Start(ctx.Done())
		defer c.informers.Shutdown()
	}
	logger.Info("Starting controller")
	defer logger.Info("Stopped controller")
	c.loop.Run(ctx, workers, c.synced)
}

// sync works on a copy: objects in the informer's cache are shared.
func (c *Controller) sync(ctx context.Context, name string) error {
	ns, err := c.lister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get namespace %s from cache: %w", name, err)
	}
	return c.reconciler.reconcile(ctx, ns.DeepCopy())
}
