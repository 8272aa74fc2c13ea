package etcdv3

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// Defaults are etcd's.
const (
	DefaultProgressNotifyInterval = 10 * time.Minute
	// MinProgressNotifyInterval: shorter intervals are raised to it, as etcd does.
	MinProgressNotifyInterval = 100 * time.Millisecond
	DefaultMaxTxnOps          = 128
	DefaultMaxRequestBytes    = 1536 * 1024
	// grpcOverheadBytes is what etcd lets a gRPC message exceed
	// MaxRequestBytes by, so that a too large request is answered with
	// "request is too large" rather than a transport error.
	grpcOverheadBytes = 512 * 1024
	defaultName       = "heaven"
)

// Config configures a Server.
type Config struct {
	// Branch selects single-branch mode: the whole keyspace is this branch
	// (what a stock kube-apiserver or the apiserver storage tests expect).
	// Empty selects prefix mode: the first path component of every key names
	// the branch ("/team-a/registry/x" is "/registry/x" in branch "team-a").
	Branch string
	// ProgressNotifyInterval is how often watches created with
	// progress_notify get a progress notification when idle. Default 10m.
	ProgressNotifyInterval time.Duration
	// MaxTxnOps is the most operations in a txn (etcd's --max-txn-ops).
	// Default 128.
	MaxTxnOps int
	// MaxRequestBytes is the largest write request (etcd's
	// --max-request-bytes). Default 1.5 MiB.
	MaxRequestBytes int
	// RepositoryPath is the repository's directory: cluster and member IDs
	// derive from it (and from Branch), and Status reports its size.
	RepositoryPath string
	// Name is the member name in MemberList. Default "heaven".
	Name string
	// ClientURLs are the URLs MemberList advertises. Default: the URLs of
	// the listeners passed to Serve.
	ClientURLs []string
	// Keys renames keys below the branch (nil: clients name keys as the
	// store does): for a stock kube-apiserver on a heaven's branch.
	Keys *KeyMap
}

// Server is the etcd v3 gRPC API over a gitstore.Repository: KV, Watch,
// Lease, Maintenance, Cluster, a disabled Auth, and the gRPC health service.
type Server struct {
	cfg     Config
	backend backend
	rt      router
	hdr     header
	health  *health.Server
	grpc    *grpc.Server

	// stopc is closed by Shutdown; watch and keepalive streams end on it.
	stopc    chan struct{}
	stopOnce sync.Once

	mu   sync.Mutex
	urls []string // of the listeners passed to Serve
}

// NewServer returns a Server for repo with its gRPC server built and every
// service registered. Call Serve for each listener, Shutdown to stop.
func NewServer(repo *gitstore.Repository, cfg Config) (*Server, error) {
	return newServer(gitBackend{repo}, cfg)
}

func newServer(be backend, cfg Config) (*Server, error) {
	cfg, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:     cfg,
		backend: be,
		rt:      router{single: cfg.Branch, keys: cfg.Keys},
		hdr:     newHeader(cfg.RepositoryPath, cfg.Branch),
		health:  health.NewServer(),
		stopc:   make(chan struct{}),
	}
	s.grpc = grpc.NewServer(s.ServerOptions()...)
	s.Register(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// complete fills in defaults and rejects nonsense.
func (c Config) complete() (Config, error) {
	var errs []error
	if c.Branch != "" {
		errs = append(errs, gitstore.ValidateBranchName(c.Branch))
	}
	if c.ProgressNotifyInterval < 0 || c.MaxTxnOps < 0 || c.MaxRequestBytes < 0 {
		errs = append(errs, fmt.Errorf("etcdv3: negative ProgressNotifyInterval, MaxTxnOps or MaxRequestBytes"))
	}
	if c.ProgressNotifyInterval == 0 {
		c.ProgressNotifyInterval = DefaultProgressNotifyInterval
	}
	if c.ProgressNotifyInterval < MinProgressNotifyInterval {
		klog.InfoS("Raising the watch progress notify interval to the minimum",
			"interval", c.ProgressNotifyInterval, "minimum", MinProgressNotifyInterval)
		c.ProgressNotifyInterval = MinProgressNotifyInterval
	}
	if c.MaxTxnOps == 0 {
		c.MaxTxnOps = DefaultMaxTxnOps
	}
	if c.MaxRequestBytes == 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.Name == "" {
		c.Name = defaultName
	}
	c.ClientURLs = slices.Clone(c.ClientURLs)
	return c, errors.Join(errs...)
}

// ServerOptions are the gRPC server options the etcd API needs (message
// sizes and keepalive as etcd sets them); for a gRPC server built elsewhere
// and passed to Register.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.cfg.MaxRequestBytes + grpcOverheadBytes),
		grpc.MaxSendMsgSize(math.MaxInt32),
		grpc.MaxConcurrentStreams(math.MaxUint32),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 2 * time.Hour, Timeout: 20 * time.Second}),
		// Clients (kube-apiserver among them) ping idle connections.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(logUnary),
	}
}

// Register registers every service on reg. NewServer already did so on the
// Server's own gRPC server.
func (s *Server) Register(reg grpc.ServiceRegistrar) {
	pb.RegisterKVServer(reg, &kvServer{s: s})
	pb.RegisterWatchServer(reg, &watchServer{s: s})
	pb.RegisterLeaseServer(reg, &leaseServer{s: s})
	pb.RegisterMaintenanceServer(reg, &maintenanceServer{s: s})
	pb.RegisterClusterServer(reg, &clusterServer{s: s})
	pb.RegisterAuthServer(reg, &authServer{s: s})
	healthpb.RegisterHealthServer(reg, s.health)
}

// GRPCServer is the Server's gRPC server, to register more services on
// before serving.
func (s *Server) GRPCServer() *grpc.Server { return s.grpc }

// Serve serves on l (TCP or unix socket; see Listen) until Shutdown. It may
// be called for several listeners at once.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	s.urls = append(s.urls, ListenerURL(l))
	s.mu.Unlock()
	if err := s.grpc.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// Shutdown ends every watch and lease keepalive stream (clients see
// Unavailable and reconnect elsewhere), reports NOT_SERVING on the health
// service, and waits for the other calls to finish. When ctx ends first the
// remaining calls are cut off.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopc) })
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

func (s *Server) clientURLs() []string {
	if len(s.cfg.ClientURLs) > 0 {
		return s.cfg.ClientURLs
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.urls)
}

// logUnary logs every unary call at V(5).
func logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	logger := klog.FromContext(ctx)
	if logger.V(5).Enabled() {
		logger.V(5).Info("etcd request", "method", info.FullMethod, "code", status.Code(err), "duration", time.Since(start))
	}
	return resp, err
}
