package heavenapi

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apigroups"
	"github.com/heaven-dev/heaven/pkg/authorization"
	builtin "github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/controllers/namespace"
	"github.com/heaven-dev/heaven/pkg/controllers/resourcequota"
	"github.com/heaven-dev/heaven/pkg/heavenapi/intern"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
	"github.com/heaven-dev/heaven/pkg/history"
)

// InitialNamespaces exist in every heaven, as in a real cluster.
var InitialNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem}

// Server is one heaven's running API server.
type Server struct {
	name       string
	namespaces []string // created when it starts
	handler    http.Handler
	ownWatches http.Handler // see OwnWatchHandler
	kube       kubernetes.Interface
	tokens     authenticator.Token // the heaven's ServiceAccount tokens
	authz      authorizer.UnconditionalAuthorizer
	run        func(context.Context) error
	signals    func() map[string]<-chan struct{}

	cancel   context.CancelFunc
	startErr atomic.Pointer[error] // why it gave up starting, if it did
	failed   chan struct{}         // closed when it gives up starting
	done     chan struct{}         // closed when the server has shut down
	ready    chan struct{}         // closed when it serves every request
	err      error                 // of the run loop, valid after done
}

// New builds the heaven's API server; Start runs it.
func New(c Config) (*Server, error) {
	if err := setFeatureDefaults(); err != nil {
		return nil, fmt.Errorf("heaven %s: feature gates: %w", c.Name, err)
	}
	c.Loopback = rest.CopyConfig(c.Loopback)
	b, err := c.build()
	if err != nil {
		return nil, fmt.Errorf("heaven %s: %w", c.Name, err)
	}
	s, run := b.server, b.run
	srv := &Server{
		name:       c.Name,
		namespaces: c.initialNamespaces(),
		handler:    s.Handler,
		ownWatches: b.ownWatches,
		kube:       b.kube,
		tokens:     b.tokens,
		authz:      s.Authorizer,
		done:       make(chan struct{}),
		ready:      make(chan struct{}),
		failed:     make(chan struct{}),
	}
	srv.run = run
	srv.signals = s.MuxAndDiscoveryCompleteSignals
	return srv, nil
}

// Authorize answers as the heaven's authorizer: server administrators,
// then the heaven's RBAC.
func (s *Server) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	return s.authz.Authorize(ctx, a)
}

// Handler serves the heaven's API; paths are without /clusters/<name>.
func (s *Server) Handler() http.Handler { return s.handler }

// OwnWatchHandler serves the watches of the heaven's own clients (see
// ownWatchHandler); paths are without /clusters/<name>.
func (s *Server) OwnWatchHandler() http.Handler { return s.ownWatches }

// Ready is closed once the heaven serves every request: its CRDs are
// installed and its initial namespaces exist.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Failed is closed when the server gives up starting (Err says why); it
// then stops.
func (s *Server) Failed() <-chan struct{} { return s.failed }

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Start runs the server until Stop.
func (s *Server) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		s.err = s.run(ctx)
	}()
	go s.becomeReady(ctx)
}

// Stop shuts the server down and waits until its goroutines and storage are
// released, or ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.waitStartHooks(ctx)
	s.cancel()
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return fmt.Errorf("heaven %s: stopping: %w", s.name, ctx.Err())
	}
}

// initialObjectsTimeout bounds how long a heaven tries to create its
// initial namespaces before it gives up starting; an error the store
// answers with 500 (a branch that cannot be written) ends it sooner.
const (
	initialObjectsTimeout = 30 * time.Second
	maxInternalErrors     = 3
)

func (s *Server) becomeReady(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("heaven", s.name)
	for _, ns := range s.namespaces {
		if err := s.createInitialNamespace(ctx, ns); err != nil {
			if ctx.Err() == nil {
				logger.Error(err, "Heaven could not start")
				s.startErr.Store(&err)
				close(s.failed)
				s.waitStartHooks(ctx)
				s.cancel()
			}
			return
		}
	}
	for name, signal := range s.signals() {
		select {
		case <-signal:
		case <-ctx.Done():
			logger.V(2).Info("Stopped before ready", "waitingFor", name)
			return
		}
	}
	close(s.ready)
}

// createInitialNamespace creates namespace ns, retrying with backoff while
// the heaven's own API is still coming up, at most initialObjectsTimeout,
// and giving up after maxInternalErrors internal errors in a row.
func (s *Server) createInitialNamespace(ctx context.Context, ns string) error {
	var last error
	internal := 0
	backoff := wait.Backoff{Duration: 20 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 2 * time.Second}
	bounded, cancel := context.WithTimeout(ctx, initialObjectsTimeout)
	defer cancel()
	err := wait.ExponentialBackoffWithContext(bounded, backoff, func(ctx context.Context) (bool, error) {
		_, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return true, nil
		}
		last = err
		if apierrors.IsInternalError(err) {
			if internal++; internal >= maxInternalErrors {
				return false, err
			}
		} else {
			internal = 0
		}
		return false, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case last != nil:
		return fmt.Errorf("creating namespace %s: %w", ns, last)
	}
	return fmt.Errorf("creating namespace %s: %w", ns, err)
}

// Err says why the server stopped (nil while it runs, or after Stop).
func (s *Server) Err() error {
	if err := s.startErr.Load(); err != nil {
		return *err
	}
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// waitStartHooks waits (at most until ctx ends, or startHooksTimeout) for
// the post-start hooks that signal their end: the generic API server exits
// the process when such a hook is cancelled before it is done
// (apiextensions' crd-informer-synced does), so a server is only stopped
// once they are.
func (s *Server) waitStartHooks(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, startHooksTimeout)
	defer cancel()
	for _, signal := range s.signals() {
		select {
		case <-signal:
		case <-s.done:
			return
		case <-ctx.Done():
			return
		}
	}
}

const startHooksTimeout = 10 * time.Second

// built is what build assembles.
type built struct {
	server     *genericapiserver.GenericAPIServer
	ownWatches http.Handler                // OwnWatchHandler
	run        func(context.Context) error // runs the prepared server until its context ends
	kube       kubernetes.Interface        // the heaven's loopback clientset
	tokens     authenticator.Token         // the heaven's ServiceAccount tokens; nil without
}

// build assembles the generic server: CRDs (apiextensions-apiserver), the
// built-in groups, the heaven's controllers as post-start hooks, and the
// shared OpenAPI documents.
func (c Config) build() (*built, error) {
	policy := &authorization.Policy{}
	gc, kube, err := c.genericConfig(policy)
	if err != nil {
		return nil, err
	}
	ac := &apiextensionsapiserver.Config{
		GenericConfig: gc,
		ExtraConfig: apiextensionsapiserver.ExtraConfig{
			CRDRESTOptionsGetter: &storage.Getter{Heaven: c.Name, Clients: c.Clients, Codec: unstructuredCodec, Ephemeral: c.Ephemeral, GarbageCollection: c.Kubernetes},
			MasterCount:          1,
		},
	}
	completed := ac.Complete()
	// apiextensions turns discovery off because kube-apiserver's aggregator
	// serves /apis; here the same server serves the built-in groups and
	// must answer /apis itself (its aggregated discovery includes CRDs).
	completed.GenericConfig.EnableDiscovery = true
	completed.GenericConfig.SecureServing = &genericapiserver.SecureServingInfo{Listener: idleListener(c.ExternalAddress)}

	crds, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	s := crds.GenericAPIServer
	tokens, audiences, err := c.tokenGenerator()
	if err != nil {
		s.Destroy()
		return nil, err
	}
	tokenReviews, err := c.tokenAuthenticator(kube)
	if err != nil {
		s.Destroy()
		return nil, err
	}
	var reviews authenticator.Request
	if tokenReviews != nil {
		reviews = bearertoken.New(tokenReviews)
	}
	bc := c.builtin()
	if c.Kubernetes {
		bc.Loopback, bc.Informers = gc.LoopbackClientConfig, gc.SharedInformerFactory
		bc.Ranges = storage.Ranges{Heaven: c.Name, Endpoints: c.Clients.Ephemeral.Endpoints(), Codec: typedCodec}
	}
	bc.Authorizer, bc.RuleResolver, bc.RBAC = gc.Authorization.Authorizer, gc.RuleResolver, policy
	bc.Authenticator, bc.Discovery = reviews, kube.Discovery()
	bc.ServiceAccountTokens, bc.APIAudiences = tokens, audiences
	bc.Serving = apigroups.ServingOf(&gc.Config) // completed by completed.New
	err = builtin.Install(s, bc, gc.RESTOptionsGetter)
	if err != nil {
		s.Destroy()
		return nil, fmt.Errorf("built-in types: %w", err)
	}
	if h := c.History; h != nil && !c.ReadOnly {
		err := history.Install(s, history.Config{Heaven: c.Name, Repo: h.Repo, Authorizer: gc.Authorization.Authorizer, MayRead: h.MayRead, Serving: bc.Serving})
		if err != nil {
			s.Destroy()
			return nil, fmt.Errorf("history: %w", err)
		}
	}
	// The heaven's own controllers, Kubernetes' (as kube-controller-manager
	// runs them), share its loopback clients and informers.
	meta, err := metadata.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		s.Destroy()
		return nil, err
	}
	s.AddPostStartHookOrDie("heaven-rbac-policy", func(hc genericapiserver.PostStartHookContext) error {
		policy.Run(hc.Context, c.rbacChanges())
		return nil
	})
	if !c.ReadOnly { // the past has no controllers
		s.AddPostStartHookOrDie("heaven-namespace-controller", func(hc genericapiserver.PostStartHookContext) error {
			// The namespace informer is the one admission uses: one watch less.
			namespace.Run(hc.Context, kube, meta, gc.SharedInformerFactory.Core().V1().Namespaces())
			return nil
		})
		s.AddPostStartHookOrDie("heaven-resource-quota", func(hc genericapiserver.PostStartHookContext) error {
			// Admission's ResourceQuota informer tells when the first quota comes.
			return resourcequota.Run(hc.Context, kube, meta, gc.SharedInformerFactory.Core().V1().ResourceQuotas())
		})
	}
	prepared := s.PrepareRun()
	if err := installOpenAPI(s, gc.OpenAPIConfig, gc.OpenAPIV3Config, crds.Informers.Apiextensions().V1().CustomResourceDefinitions().Lister()); err != nil {
		s.Destroy()
		return nil, fmt.Errorf("OpenAPI: %w", err)
	}
	if err := intern.Routes(s.Handler.GoRestfulContainer); err != nil {
		klog.ErrorS(err, "Heaven keeps its own copy of its routes", "heaven", c.Name)
	}
	if err := intern.DropPathStacks(s.Handler.NonGoRestfulMux); err != nil {
		klog.ErrorS(err, "Heaven keeps the stacks of its paths' registrations", "heaven", c.Name)
	}
	return &built{server: s, ownWatches: ownWatchHandler(s, gc.RequestInfoResolver), run: prepared.RunWithContext, kube: kube, tokens: tokenReviews}, nil
}

// rbacChanges watches the heaven's RBAC objects with one watch of the keys
// below their four stores: one goroutine, where a watch through each store
// takes five.
func (c Config) rbacChanges() authorization.Changes {
	client := c.Clients.Git
	key := path.Join("/", c.Clients.GitPrefix, rbacv1.GroupName) + "/"
	return func(ctx context.Context) clientv3.WatchChan {
		// From the revision of now: an etcd client starts its watches
		// later, and a change in between must not be lost.
		now, err := client.KV.Get(ctx, key, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			klog.V(2).InfoS("Watching RBAC changes", "heaven", c.Name, "err", err)
			ended := make(chan clientv3.WatchResponse)
			close(ended)
			return ended
		}
		return client.Watch(ctx, key, clientv3.WithPrefix(), clientv3.WithRev(now.Header.Revision+1))
	}
}
