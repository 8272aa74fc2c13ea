// Package syncer is the generic syncer: it makes a heaven drive a physical
// cluster. Objects in the heaven labelled heaven.dev/cluster=<target> are
// copied down (everything but status) into namespaces of the cluster that
// are private to (heaven, target, namespace); what the cluster observes
// (status) is copied back up. The syncer knows no type: it is told which
// resources to sync, teaches the heaven those it lacks (CRDs copied up,
// built-in types turned into CRDs from the cluster's OpenAPI), and runs a
// pair of informers per resource feeding one workqueue.
//
// Files: syncer.go (assembly, Run), object_controller.go (queue, events),
// object_reconcile.go (the per-object decision), namespaces.go, transform.go
// (what is sent down and up), type_controller.go and type_resolve.go (which
// resources are synced and how the heaven learns them), crd_openapi.go,
// status.go (SyncTarget status and heartbeat), metrics.go.
package syncer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	heavenclient "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/typed/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
)

// Syncer syncs one heaven with one physical cluster for one SyncTarget.
type Syncer struct {
	cfg CompletedConfig
	id  identity

	up, down sides
	// targets reaches the SyncTargets of the heaven holding the syncer's
	// (root), where only that one may be read and its status written.
	targets heavenclient.SyncTargetInterface

	recorder    record.EventRecorder
	broadcaster record.EventBroadcaster

	// namespaces caches the downstream namespaces this syncer owns,
	// upNamespaces the heaven's namespaces.
	namespaces, upNamespaces cache.SharedIndexInformer
	// target caches the SyncTarget (for spec.resources and
	// spec.heartbeatInterval), from root; targetLister reads it.
	target       cache.SharedIndexInformer
	targetLister heavenlisters.SyncTargetLister

	queue     workqueue.TypedRateLimitingInterface[objectKey]
	typeQueue workqueue.TypedRateLimitingInterface[string]
	// nsQueue holds heaven namespaces whose downstream namespace may be
	// deleted.
	nsQueue workqueue.TypedRateLimitingInterface[string]

	// mu guards types, states and failures. Never held during a request.
	mu sync.RWMutex
	// types are the resources being synced, with their informers.
	types map[schema.GroupResource]*syncedType
	// states is the state of every requested resource, by resource string.
	states map[string]v1alpha1.ResourceSyncStatus
	// failures holds the last error of every object whose last
	// reconciliation failed.
	failures map[objectKey]string

	// openAPIRefreshed are the resources whose OpenAPI-built CRD was
	// rebuilt in this run. Only the type worker uses it.
	openAPIRefreshed map[schema.GroupResource]bool

	// downstreamErr is the last error reaching the physical cluster during
	// type discovery, nil when it answered.
	downstreamErr atomic.Pointer[error]
	// typesReconciled is set once the requested types were resolved.
	typesReconciled atomic.Bool

	// statusMu serializes writes of the SyncTarget's status.
	statusMu sync.Mutex
}

// sides are the clients of one side (heaven or physical cluster).
type sides struct {
	dynamic   dynamic.Interface
	kube      kubernetes.Interface
	discovery *discovery.DiscoveryClient
	crds      apiextensionsclient.Interface
}

// New builds the syncer's clients; Run starts it.
func (c CompletedConfig) New() (*Syncer, error) {
	up, err := clientsFor(c.Upstream)
	if err != nil {
		return nil, fmt.Errorf("upstream: %w", err)
	}
	down, err := clientsFor(c.Downstream)
	if err != nil {
		return nil, fmt.Errorf("downstream: %w", err)
	}
	root, err := versioned.NewForConfig(c.Root)
	if err != nil {
		return nil, fmt.Errorf("root: %w", err)
	}
	registerMetrics()
	s := &Syncer{
		cfg:     c,
		id:      identity{heaven: c.Heaven, target: c.SyncTarget},
		up:      up,
		down:    down,
		targets: root.HeavenV1alpha1().SyncTargets(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[objectKey](),
			workqueue.TypedRateLimitingQueueConfig[objectKey]{Name: "syncer_objects"}),
		typeQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "syncer_types"}),
		nsQueue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "syncer_namespaces"}),
		types:    map[schema.GroupResource]*syncedType{},
		states:   map[string]v1alpha1.ResourceSyncStatus{},
		failures: map[objectKey]string{},

		openAPIRefreshed: map[schema.GroupResource]bool{},
	}
	s.namespaces = informers.NewSharedInformerFactoryWithOptions(down.kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = s.id.ownerSelector() }),
	).Core().V1().Namespaces().Informer()
	s.upNamespaces = informers.NewSharedInformerFactory(up.kube, 0).Core().V1().Namespaces().Informer()
	s.addNamespaceGCHandlers()
	// Only its own SyncTarget: root lets a syncer list and watch nothing else.
	targets := externalversions.NewSharedInformerFactoryWithOptions(root, 0,
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", c.SyncTarget).String()
		}),
	).Heaven().V1alpha1().SyncTargets()
	s.target, s.targetLister = targets.Informer(), targets.Lister()
	// Only spec changes matter: status changes are the syncer's own.
	_, _ = s.target.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { s.typeQueue.Add(typesKey) },
		UpdateFunc: func(old, obj any) {
			o, ok1 := old.(*v1alpha1.SyncTarget)
			n, ok2 := obj.(*v1alpha1.SyncTarget)
			if !ok1 || !ok2 || o.Generation != n.Generation {
				s.typeQueue.Add(typesKey)
			}
		},
	})
	return s, nil
}

func clientsFor(cfg *rest.Config) (sides, error) {
	var c sides
	var err error
	if c.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return c, err
	}
	if c.discovery, err = discovery.NewDiscoveryClientForConfig(cfg); err != nil {
		return c, err
	}
	c.crds, err = apiextensionsclient.NewForConfig(cfg)
	return c, err
}

// Run syncs until ctx ends, then stops every informer and worker before
// it returns. A Syncer runs once.
func (s *Syncer) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("heaven", s.id.heaven, "syncTarget", s.id.target)
	ctx = klog.NewContext(ctx, logger)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger.Info("Starting syncer", "resources", s.cfg.Options.Resources)

	s.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.up.kube.CoreV1().Events("")})
	defer s.broadcaster.Shutdown()
	s.recorder = s.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "heaven-syncer/" + s.id.target})

	// On return, in this order: ctx ends, the queues shut down, every
	// goroutine started below ends, then the types' informers stop.
	var wg sync.WaitGroup
	defer s.stopTypes()
	defer wg.Wait()
	defer s.queue.ShutDown()
	defer s.typeQueue.ShutDown()
	defer s.nsQueue.ShutDown()
	defer cancel()

	serveErr := make(chan error, 1)
	if l := s.cfg.MetricsListener; l != nil {
		wg.Go(func() { serveErr <- serveMetrics(ctx, l, healthz.NamedCheck("synced", s.readyCheck)) })
	}
	wg.Go(func() { s.namespaces.RunWithContext(ctx) })
	wg.Go(func() { s.target.RunWithContext(ctx) })
	wg.Go(func() { s.upNamespaces.RunWithContext(ctx) })
	// Nothing waits for these caches: the namespace cache is only a
	// shortcut (a miss asks the cluster), and an unreachable cluster must
	// not keep the heartbeat from reporting it.

	wg.Go(func() { s.runTypeWorker(ctx) })
	wg.Go(func() { s.runNamespaceWorker(ctx) })
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(context.Context) { s.typeQueue.Add(typesKey) }, s.cfg.TypeResyncInterval)
	})
	for range s.cfg.Workers {
		wg.Go(func() { wait.UntilWithContext(ctx, s.runObjectWorker, time.Second) })
	}
	wg.Go(func() { s.runHeartbeat(ctx) })

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if err != nil {
			return fmt.Errorf("serving metrics: %w", err)
		}
	}
	logger.Info("Stopping syncer")
	return nil
}

// readyCheck is /readyz: ready once the requested types were resolved and
// the informers of every synced type have synced.
func (s *Syncer) readyCheck(*http.Request) error {
	if !s.typesReconciled.Load() {
		return errors.New("resources not resolved yet")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for gr, t := range s.types {
		if !t.synced() {
			return fmt.Errorf("informers of %s not synced", gr)
		}
	}
	return nil
}
