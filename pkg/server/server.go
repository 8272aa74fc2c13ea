// Package server is heaven-server: one HTTPS endpoint that serves many
// heavens under /clusters/<name>, each a Kubernetes API server of its own
// (pkg/heavenapi) whose objects live on the git branch of that name, started
// on demand and stopped when idle.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/admission/heavencreator"
	"github.com/heaven-dev/heaven/pkg/admission/objectlimit"
	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	historyv1alpha1 "github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/authorization"
	mergectrl "github.com/heaven-dev/heaven/pkg/controllers/automatedmerge"
	heavenctrl "github.com/heaven-dev/heaven/pkg/controllers/heaven"
	remotectrl "github.com/heaven-dev/heaven/pkg/controllers/remote"
	"github.com/heaven-dev/heaven/pkg/deputy"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	"github.com/heaven-dev/heaven/pkg/githook"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/heavenapi"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
	"github.com/heaven-dev/heaven/pkg/memnet"
	"github.com/heaven-dev/heaven/pkg/objectfile"
	"github.com/heaven-dev/heaven/pkg/pki"
)

// RootHeaven is the heaven that holds Heaven objects; it always exists.
const RootHeaven = "root"

// Config is heaven-server's configuration, from Options.
type Config struct {
	Options
	DataDir string // absolute
}

// CompletedConfig is a Config whose defaults are filled in.
type CompletedConfig struct{ *Config }

// Config turns validated options into a configuration.
func (o *Options) Config() (*Config, error) {
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, err
	}
	return &Config{Options: *o, DataDir: dir}, nil
}

// Complete fills in defaults.
func (c *Config) Complete() CompletedConfig { return CompletedConfig{c} }

// Server is a running heaven-server.
type Server struct {
	cfg     CompletedConfig
	lock    *os.File // of the data directory, held while the server lives
	pki     *pki.Bundle
	repo    *gitstore.Repository // nil with --storage=etcd
	etcd    *etcdBackend
	etcdAPI *etcdAPI // nil without --etcd-api-urls
	heavens *heavens
	front   *front
	// inProcess serves heaven-server's own requests to heavens (their
	// controllers', admission's, its own) with the front, in process, as
	// the loopback user.
	inProcess *memnet.Transport
	listener  net.Listener
	metrics   *metrics

	objectFiles *objectfile.Reader // reads files committed from outside
	outside     *outsideFiles      // the files of open branches that are not served

	audit *auditLog // nil: no audit log
	// syncTargets remembers whether each SyncTarget's requester may still
	// have its heaven synced.
	syncTargets *syncTargetRights
	ephemeral   map[schema.GroupResource]bool
	heavenCtrl  atomic.Pointer[heavenctrl.Controller]
	rootReady   chan struct{} // closed once heavenCtrl is set
	mergeCtrl   atomic.Pointer[mergectrl.Controller]

	// stopLifecycle ends what runs for the server's lifetime in the
	// background (JWT key set refreshes).
	stopLifecycle context.CancelFunc

	loopbackOnce   sync.Once
	loopbackClient *http.Client
	loopbackErr    error
	remoteCtrl     atomic.Pointer[remotectrl.Controller]
}

// New opens the data directory, the stores and the HTTPS listener; Run
// serves.
func (c CompletedConfig) New() (_ *Server, err error) {
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	lock, err := lockDataDir(c.DataDir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: c, lock: lock, metrics: serverMetrics(), ephemeral: map[schema.GroupResource]bool{}, rootReady: make(chan struct{})}
	defer func() {
		if err != nil {
			s.close(context.Background())
		}
	}()
	for _, r := range c.EphemeralResources {
		s.ephemeral[schema.ParseGroupResource(r)] = true
	}
	if s.audit, err = newAuditLog(c.Audit); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if s.pki, err = pki.Ensure(filepath.Join(c.DataDir, "pki"), []string{c.externalHost()}); err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	if s.etcd, err = startEtcdBackend(filepath.Join(c.DataDir, "etcd"), c.EtcdServers); err != nil {
		return nil, err
	}
	if c.Storage == StorageGit {
		if s.objectFiles, err = ObjectFiles(); err != nil {
			return nil, fmt.Errorf("built-in types: %w", err)
		}
		s.outside = newOutsideFiles(s.metrics)
		s.outside.event = s.emitProblemEvent
		s.outside.changed = func(heaven string) {
			if ctrl := s.heavenCtrl.Load(); ctrl != nil {
				ctrl.Enqueue(heaven)
			}
		}
		repoDir := filepath.Join(c.DataDir, "heavens.git")
		if s.repo, err = openGitStore(repoDir, s.metrics, gitstore.Options{
			OnHead: s.branchMoved, ReadFile: s.objectFiles.Read, OnProblems: s.outside.update,
		}); err != nil {
			return nil, err
		}
		// It holds Secrets: readable by this user only, like pki/.
		if err := os.Chmod(repoDir, 0o700); err != nil {
			return nil, err
		}
		s.installPreReceiveHook(repoDir)
	}

	if s.etcdAPI, err = s.newEtcdAPI(); err != nil {
		return nil, err
	}
	s.listener, err = net.Listen("tcp", net.JoinHostPort(c.BindAddress, strconv.Itoa(c.SecurePort)))
	if err != nil {
		return nil, err
	}
	s.heavens = newHeavens(s.newHeaven, c.IdleTimeout, s.metrics)
	s.heavens.onStop = s.heavenStopped
	s.heavens.allowed = s.allowed
	var lifecycle context.Context
	lifecycle, s.stopLifecycle = context.WithCancel(context.Background())
	authn, err := newAuthenticator(lifecycle, s.pki, c.AuthenticationConfig)
	if err != nil {
		return nil, err
	}
	slots := c.MaxRequestsInflight
	if slots == 0 {
		slots = 8 * runtime.GOMAXPROCS(0)
	}
	perHeaven := c.MaxRequestsInflightPerHeaven
	if perHeaven == 0 || perHeaven > slots {
		perHeaven = slots
	}
	fair := newFairQueue(slots, perHeaven, c.MaxRequestsQueuedPerHeaven)
	fair.waited = func(h string) { s.metrics.requestsWaited.WithLabelValues(h).Inc() }
	fair.rejected = func(h string) { s.metrics.requestsRefused.WithLabelValues(h).Inc() }
	s.syncTargets = &syncTargetRights{get: s.getSyncTarget, authorize: s.authorizeIn, checked: map[string]syncTargetCheck{}}
	s.front = &front{
		fair:         fair,
		heavens:      s.heavens,
		authn:        authn,
		root:         s.rootHandler(),
		public:       map[string]bool{"/healthz": true, "/livez": true, "/readyz": true, "/version": true},
		metrics:      s.metrics,
		heavenTokens: s.heavenTokens,
		allHeavens:   s.serveAllHeavens,
		authorizeRoot: func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			return s.authorizeIn(ctx, RootHeaven, a)
		},
	}
	s.inProcess = &memnet.Transport{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.front.ServeHTTP(w, r.WithContext(withLoopback(r.Context())))
	})}
	if err := s.pki.WriteKubeconfig(s.KubeconfigPath(), s.URL(), RootHeaven, "default"); err != nil {
		return nil, fmt.Errorf("writing %s: %w", s.KubeconfigPath(), err)
	}
	return s, nil
}

// URL is the server's base URL, e.g. https://127.0.0.1:6443.
func (s *Server) URL() string {
	_, port, _ := net.SplitHostPort(s.listener.Addr().String())
	return "https://" + net.JoinHostPort(s.cfg.externalHost(), port)
}

// KubeconfigPath is the admin kubeconfig written on start.
func (s *Server) KubeconfigPath() string { return filepath.Join(s.cfg.DataDir, "admin.kubeconfig") }

// FlushGit writes the commits the store still holds in memory into the
// repository's files now, for a program that runs git on the repository
// right after a write (the store does it a few milliseconds later by
// itself). Without git storage it does nothing.
func (s *Server) FlushGit() error {
	if s.repo == nil {
		return nil
	}
	return s.repo.Flush()
}

// Run serves until ctx ends, then shuts down within the shutdown timeout.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	applyGCPercent(logger, s.cfg.GCPercent)
	tlsServer := &http.Server{
		Handler: s.front,
		TLSConfig: &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{s.pki.Serving},
			ClientAuth:   tls.RequestClientCert, // verified by the authenticator
			NextProtos:   []string{"h2", "http/1.1"},
		},
		ReadHeaderTimeout: 32 * time.Second,
		MaxHeaderBytes:    1 << 20,
	}
	errs := make(chan error, 1+len(s.cfg.EtcdAPIURLs))
	go func() { errs <- tlsServer.ServeTLS(s.listener, "", "") }()
	if s.etcdAPI != nil {
		s.etcdAPI.serve(ctx, s.cfg.EtcdAPILayout, s.EphemeralEtcdURLs(), errs)
	}

	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	err := s.serve(runCtx, errs, &wg)
	cancel()
	wg.Wait()

	shutdownCtx, done := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer done()
	logger.Info("Shutting down")
	_ = tlsServer.Shutdown(shutdownCtx)
	if s.etcdAPI != nil {
		s.etcdAPI.shutdown(shutdownCtx)
	}
	s.heavens.stopAll(shutdownCtx)
	s.close(shutdownCtx)
	return err
}

// serve starts the root heaven and the background loops, and returns when
// ctx ends or a listener fails.
func (s *Server) serve(ctx context.Context, errs <-chan error, wg *sync.WaitGroup) error {
	ctrl, err := s.startRoot(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // asked to stop while starting: not a failure
		}
		return err
	}
	s.heavenCtrl.Store(ctrl)
	close(s.rootReady)
	go s.adoptBranches(ctx)
	wg.Add(2)
	go func() { defer wg.Done(); s.heavens.runEvictor(ctx) }()
	go func() { defer wg.Done(); s.runCompactor(ctx) }()
	klog.FromContext(ctx).Info("Serving heavens", "url", s.URL()+ClustersPrefix+"<name>", "kubeconfig", s.KubeconfigPath(), "storage", s.cfg.Storage)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return fmt.Errorf("serving: %w", err)
	}
}

func (s *Server) close(ctx context.Context) {
	if s.stopLifecycle != nil {
		s.stopLifecycle()
	}
	if s.listener != nil {
		_ = s.listener.Close()
	}
	if s.etcdAPI != nil {
		s.etcdAPI.close()
	}
	if s.repo != nil {
		if err := s.repo.Close(); err != nil {
			klog.ErrorS(err, "Closing the git repository")
		}
	}
	if s.etcd != nil {
		s.etcd.close()
	}
	s.audit.close()
	_ = s.lock.Close() // last: everything in the directory is closed
}

// allowed says whether heaven name may start: root always; others if
// heavens are created on first use or a Heaven object names them.
//
// A heaven without a Heaven object is created on first use only for server
// administrators (and heaven-server itself); anybody else gets
// errCreateForbidden and nothing is created.
func (s *Server) allowed(ctx context.Context, name string) (bool, error) {
	if name == RootHeaven {
		return true, nil
	}
	if heaven, rev, isView, err := splitView(name); isView {
		if err != nil {
			return false, err
		}
		return s.viewAllowed(ctx, heaven, rev)
	}
	// Which heavens exist is known once root runs: a request that comes
	// earlier waits for it rather than fail.
	select {
	case <-s.rootReady:
	case <-ctx.Done():
		return false, errors.New("heaven-server is starting")
	}
	exists, err := s.heavenCtrl.Load().Exists(ctx, name)
	switch {
	case err != nil || exists:
		return exists, err
	case !s.cfg.AutoCreateHeavens:
		return false, nil
	case !mayCreateOnFirstUse(ctx):
		return false, errCreateForbidden
	}
	go s.adopt(name)
	return true, nil
}

// mayCreateOnFirstUse says whether the request's user may create a heaven
// by naming it: server administrators, and heaven-server's own requests
// (which carry no user).
func mayCreateOnFirstUse(ctx context.Context) bool {
	u, ok := request.UserFrom(ctx)
	return !ok || isAdministrator(u)
}

// newHeaven builds the API server of heaven name.
func (s *Server) newHeaven(name string) (*heavenapi.Server, error) {
	if heaven, rev, isView, err := splitView(name); isView {
		if err != nil {
			return nil, err
		}
		return s.newView(name, heaven, rev)
	}
	_, port, _ := net.SplitHostPort(s.listener.Addr().String())
	typ, err := s.heavenType(name)
	if err != nil {
		return nil, err
	}
	clients, err := s.heavenClients(name)
	if err != nil {
		return nil, err
	}
	var plugins []admission.Interface
	if name == RootHeaven {
		limit := heavencreator.Limit{Max: s.cfg.MaxHeavensPerUser, Exempt: authorization.IsAdministrator, Count: func(user string) int {
			if ctrl := s.heavenCtrl.Load(); ctrl != nil {
				return ctrl.CreatedBy(user)
			}
			return 0
		}}
		plugins = append(plugins, heavencreator.New(limit), deputy.New(s.authorizeIn, s.branchExists))
	}
	if s.repo != nil && s.cfg.MaxObjectsPerHeaven > 0 {
		plugins = append(plugins, objectlimit.New(objectlimit.Limit{
			Heaven: name, Max: s.cfg.MaxObjectsPerHeaven, Exempt: authorization.IsAdministrator,
			Ephemeral: func(gr schema.GroupResource) bool { return s.ephemeral[gr] },
			Count: func(ctx context.Context) (int, error) {
				b, err := s.repo.Branch(ctx, name)
				if err != nil {
					return 0, err
				}
				return b.Keys(), nil
			},
		}))
	}
	return heavenapi.New(heavenapi.Config{
		Name:            name,
		Kubernetes:      typ == v1alpha1.HeavenTypeKubernetes,
		Clients:         clients,
		Ephemeral:       func(gr schema.GroupResource) bool { return s.ephemeral[gr] },
		Loopback:        s.loopbackConfig(name),
		ExternalAddress: net.JoinHostPort(s.cfg.externalHost(), port),
		Authorizers:     []authorization.Named{s.syncerAuthorizer(name)},
		ProtectedGroups: []string{pki.SyncerGroup},
		Admission:       plugins,
		ServiceAccounts: s.serviceAccounts(name),
		Audit:           s.audit.heavens(),
		History:         s.history(),
	})
}

// history is where heavens' history APIs read and write: the git store
// (none with etcd storage). A Diff against another heaven reads it if the
// user may list that heaven's commits.
func (s *Server) history() *heavenapi.History {
	if s.repo == nil {
		return nil
	}
	return &heavenapi.History{Repo: s.repo, MayRead: func(ctx context.Context, heaven string) error {
		u, ok := request.UserFrom(ctx)
		if !ok {
			return apierrors.NewUnauthorized("no user")
		}
		commits := historyv1alpha1.SchemeGroupVersion.WithResource("commits")
		d, reason, err := s.authorizeIn(ctx, heaven, authorizer.AttributesRecord{User: u, Verb: "list", APIGroup: commits.Group,
			APIVersion: commits.Version, Resource: commits.Resource, ResourceRequest: true})
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		if d != authorizer.DecisionAllow {
			return apierrors.NewForbidden(commits.GroupResource(), "", fmt.Errorf("user %q may not read the history of heaven %s: %s", u.GetName(), heaven, reason))
		}
		return nil
	}}
}

// heavenTypeTimeout bounds the look-up of a heaven's type in root.
const heavenTypeTimeout = 30 * time.Second

// heavenType is the API heaven name serves, as its Heaven in root says;
// root itself is generic.
func (s *Server) heavenType(name string) (v1alpha1.HeavenType, error) {
	ctrl := s.heavenCtrl.Load()
	if name == RootHeaven || ctrl == nil {
		return v1alpha1.HeavenTypeGeneric, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), heavenTypeTimeout)
	defer cancel()
	typ, err := ctrl.Type(ctx, name)
	if err != nil {
		return "", fmt.Errorf("the type of heaven %s: %w", name, err)
	}
	return typ, nil
}

// loopbackHTTP is the one HTTP client of the in-process requests that
// heaven-server makes on its own (Heaven objects, Events).
func (s *Server) loopbackHTTP() (*http.Client, error) {
	s.loopbackOnce.Do(func() {
		s.loopbackClient, s.loopbackErr = rest.HTTPClientFor(s.loopbackConfig(RootHeaven))
	})
	return s.loopbackClient, s.loopbackErr
}

// loopbackKube is a clientset of heaven name over loopbackHTTP.
func (s *Server) loopbackKube(name string) (kubernetes.Interface, error) {
	c, err := s.loopbackHTTP()
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfigAndClient(s.loopbackConfig(name), c)
}

// loopbackHeaven is a heaven.dev clientset of heaven name over loopbackHTTP.
func (s *Server) loopbackHeaven(name string) (versioned.Interface, error) {
	c, err := s.loopbackHTTP()
	if err != nil {
		return nil, err
	}
	return versioned.NewForConfigAndClient(s.loopbackConfig(name), c)
}

// loopbackConfig reaches heaven name in process (inProcess).
func (s *Server) loopbackConfig(name string) *rest.Config {
	return &rest.Config{
		Host:          "http://heaven-loopback" + ClustersPrefix + name,
		Transport:     s.inProcess,
		QPS:           1000,
		Burst:         2000,
		UserAgent:     "heaven-server/" + name,
		ContentConfig: rest.ContentConfig{ContentType: "application/json"},
	}
}

// installPreReceiveHook keeps the repository's pre-receive hook current:
// this very binary checks pushed files (githook), or, when it can't
// (--pre-receive-hook=false, or a server embedded in another program), no
// hook of ours is left behind to run a binary that is gone.
func (s *Server) installPreReceiveHook(repoDir string) {
	exe := ""
	if s.cfg.PreReceiveHook {
		exe = s.cfg.HookExecutable
	}
	if err := githook.Install(repoDir, exe); err != nil {
		klog.ErrorS(err, "Pushed files are not checked before they are accepted")
	}
}

// heavenClients are heaven name's storage clients: a client of its git
// branch, or, with etcd storage, the shared etcd under a prefix of its own.
func (s *Server) heavenClients(name string) (storage.Clients, error) {
	if s.repo == nil {
		return storage.Clients{Git: s.etcd.client, GitPrefix: "/primary/" + name, Ephemeral: s.etcd.client}, nil
	}
	b, err := s.repo.Branch(context.Background(), name)
	if err != nil {
		return storage.Clients{}, fmt.Errorf("opening the branch of heaven %s: %w", name, err)
	}
	return storage.Clients{Git: storage.NewBranchClient(b, s.repo), Ephemeral: s.etcd.client}, nil
}

// heavenStopped releases what a stopped heaven held in the stores.
func (s *Server) heavenStopped(name string) {
	if s.repo != nil {
		if err := s.repo.CloseBranch(name); err != nil {
			klog.ErrorS(err, "Closing branch", "heaven", name)
		}
	}
}
