// Package synctarget is the cluster controller: it watches SyncTargets in
// the root heaven, installs each one's syncer in its physical cluster
// (pkg/syncer/install: namespace, service account, RBAC limited to the
// synced resources, a Secret with a credential for the target's heaven
// only, and a Deployment), reports Installed and Ready (from the syncer's
// heartbeat) in status, and on deletion uninstalls the syncer and releases
// the heaven's objects the syncer held.
//
// Files: controller.go (informers, queue), reconcile.go (the ordered
// steps and status), install.go, credential.go (the syncer's client
// certificate, kept or rotated), ready.go (heartbeat freshness),
// finalize.go (uninstall and release), cluster.go (reaching the physical
// cluster).
package synctarget

import (
	"context"
	"crypto/x509"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/reconcileloop"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	heavenclient "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/typed/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// ControllerName is the controller's name in logs and user agents.
const ControllerName = "cluster-controller"

// FieldManager is the controller's field manager in physical clusters.
const FieldManager = "heaven-cluster-controller"

// Access is how heaven-server's cluster controllers reach physical
// clusters and hand out credentials for its heavens there (the syncers',
// and ControllerHeavens' controllers'); function fields so that tests can
// use closures.
type Access struct {
	// ServerURL is how what runs in a cluster reaches heaven-server:
	// https://host:port.
	ServerURL string
	// CAPEM is the CA of heaven-server's serving and client certificates;
	// CAPool the same, to check credentials issued before.
	CAPEM  []byte
	CAPool *x509.CertPool
	// Issue issues a client certificate for user in groups, valid for
	// validFor, PEM-encoded with its key.
	Issue func(user string, groups []string, validFor time.Duration) (certPEM, keyPEM []byte, err error)
	// Revoke, if set, makes every credential issued so far to user fail
	// authentication; called when what it was issued for is deleted.
	Revoke func(user string) error
	// Connect returns a client of the physical cluster of a kubeconfig
	// (ConnectKubeconfig in production).
	Connect func(kubeconfig []byte) (dynamic.Interface, error)
}

// Deps is what the controller needs of heaven-server.
type Deps struct {
	Access
	// Heaven returns a client configuration of heaven name, which runs
	// until release is called. errors.Is(err, ErrNoHeaven) when no such
	// heaven may run.
	Heaven func(ctx context.Context, name string) (cfg *rest.Config, release func(), err error)
	// Authorized, if set, says whether the user a SyncTarget acts for may
	// still have its heaven synced, and if not why (pkg/deputy).
	Authorized func(ctx context.Context, target string) (bool, string)
}

// Options tune the controller.
type Options struct {
	// SyncerImage is the syncer image installed (install.DefaultImage).
	SyncerImage string
	// CredentialValidity is how long an issued syncer credential is
	// valid; it is replaced once older than half of that.
	CredentialValidity time.Duration
	// Reinstall is how often an installed syncer is applied again
	// although nothing changed, to repair what someone changed in the
	// physical cluster.
	Reinstall time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
}

// DefaultOptions are the production settings.
func DefaultOptions() Options {
	return Options{
		SyncerImage:        install.DefaultImage,
		CredentialValidity: 365 * 24 * time.Hour,
		Reinstall:          10 * time.Minute,
		Now:                time.Now,
	}
}

// Controller reconciles SyncTargets.
type Controller struct {
	deps    Deps
	opts    Options
	client  heavenclient.SyncTargetInterface
	targets cache.SharedIndexInformer
	lister  heavenlisters.SyncTargetLister
	secrets corelisters.SecretLister

	heavenFactory externalversions.SharedInformerFactory
	kubeFactory   informers.SharedInformerFactory
	secretsInf    cache.SharedIndexInformer
	loop          *reconcileloop.Loop

	// mu guards installed.
	mu sync.Mutex
	// installed remembers, per SyncTarget, the last successful install,
	// so that the syncer's heartbeats (status updates) do not apply the
	// manifests again.
	installed map[string]installRecord
}

// bySecret indexes SyncTargets by their kubeconfig Secret, namespace/name.
const bySecret = "kubeconfigSecret"

// New builds the controller over the root heaven's clients.
func New(root versioned.Interface, rootKube kubernetes.Interface, deps Deps, opts Options) *Controller {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	heavenFactory := externalversions.NewSharedInformerFactory(root, 0)
	targets := heavenFactory.Heaven().V1alpha1().SyncTargets()
	kubeFactory := informers.NewSharedInformerFactory(rootKube, 0)
	c := &Controller{
		deps:          deps,
		opts:          opts,
		client:        root.HeavenV1alpha1().SyncTargets(),
		heavenFactory: heavenFactory,
		targets:       targets.Informer(),
		lister:        targets.Lister(),
		kubeFactory:   kubeFactory,
		secretsInf:    kubeFactory.Core().V1().Secrets().Informer(),
		secrets:       kubeFactory.Core().V1().Secrets().Lister(),
		installed:     map[string]installRecord{},
	}
	c.loop = reconcileloop.New(reconcileloop.Options{Name: "synctarget", KeyName: "syncTarget",
		RateLimiter: reconcileloop.Backoff(100*time.Millisecond, 2*time.Minute)}, c.reconcile)
	_ = c.targets.AddIndexers(cache.Indexers{bySecret: func(obj any) ([]string, error) {
		st, ok := obj.(*v1alpha1.SyncTarget)
		if !ok || st.Spec.KubeconfigSecretRef == nil || st.Spec.KubeconfigSecretRef.Name == "" {
			return nil, nil
		}
		ref := st.Spec.KubeconfigSecretRef
		return []string{ref.Namespace + "/" + ref.Name}, nil
	}})
	enqueue := c.loop.Enqueue
	// Every change matters, status too: a heartbeat makes a target Ready.
	_, _ = c.targets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.forget(key)
			}
		},
	})
	secretChanged := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return
		}
		targets, _ := c.targets.GetIndexer().ByIndex(bySecret, s.Namespace+"/"+s.Name)
		for _, t := range targets {
			enqueue(t)
		}
	}
	_, _ = c.secretsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    secretChanged,
		UpdateFunc: func(_, obj any) { secretChanged(obj) },
		DeleteFunc: secretChanged,
	})
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.heavenFactory.StartWithContext(ctx)
	c.kubeFactory.StartWithContext(ctx)
	defer c.heavenFactory.Shutdown()
	defer c.kubeFactory.Shutdown()
	klog.FromContext(ctx).Info("Starting cluster controller", "syncerImage", c.opts.SyncerImage, "server", c.deps.ServerURL)
	c.loop.Run(ctx, workers, c.targets.HasSynced, c.secretsInf.HasSynced)
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.installed, name)
}
