// Package etcdtest runs a real single-member etcd inside the process, for
// tests and benchmarks: the reference the git store's etcd API is compared
// with, the storage of the built-in types' tests, and the etcd of the
// end-to-end tests' local clusters. It imports nothing of heaven, so that
// any package's tests can use it.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// readyTimeout bounds a start: a single member elects itself within an
// election timeout, the rest is opening its files.
const readyTimeout = time.Minute

// Config says how to run etcd; the zero value (with Dir) is a test's etcd.
type Config struct {
	// Dir holds etcd's data. NewForTest uses a temporary directory when
	// it is empty; Start requires it.
	Dir string
	// Name is the member's name; "default" when empty.
	Name string
	// Log receives etcd's warnings and errors as JSON lines (its info is a
	// page per start); nil discards everything, including the errors etcd
	// logs about its own shutdown.
	Log io.Writer
	// Fsync makes every write durable, as etcd runs in production. Tests
	// leave it off; a benchmark that compares storage turns it on.
	Fsync bool
	// ProgressNotifyInterval is etcd's --watch-progress-notify-interval;
	// zero keeps etcd's default.
	ProgressNotifyInterval time.Duration
}

// Server is a running etcd.
type Server struct {
	// URL is the client URL: http://127.0.0.1:<port>.
	URL string
	// Etcd is the embedded server itself.
	Etcd *embed.Etcd
}

// Start starts etcd on free loopback ports and returns once it serves
// clients. The caller closes it.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("etcdtest: no data directory")
	}
	ec := embed.NewConfig()
	if cfg.Name != "" {
		ec.Name = cfg.Name
	}
	ec.Dir = cfg.Dir
	ec.UnsafeNoFsync = !cfg.Fsync
	// One member elects itself after an election timeout: a short one
	// saves most of a second per start.
	ec.TickMs, ec.ElectionMs = 10, 100
	if cfg.ProgressNotifyInterval > 0 {
		ec.WatchProgressNotifyInterval = cfg.ProgressNotifyInterval
	}
	logger := zap.NewNop()
	if cfg.Log != nil {
		encoder := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		logger = zap.New(zapcore.NewCore(encoder, zapcore.AddSync(cfg.Log), zap.WarnLevel))
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	e, err := startOnFreePorts(ec)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd failed while starting: %w", err)
	case <-time.After(readyTimeout):
		e.Close()
		return nil, fmt.Errorf("etcd not ready within %v", readyTimeout)
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	return &Server{URL: ec.AdvertiseClientUrls[0].String(), Etcd: e}, nil
}

// bindAttempts are the starts tried when a port picked as free was taken
// before etcd bound it.
const bindAttempts = 3

// startOnFreePorts starts etcd on loopback ports that are free. etcd must
// be told its ports: a member advertises them (MemberList returns them),
// so ":0" will not do.
func startOnFreePorts(ec *embed.Config) (*embed.Etcd, error) {
	for attempt := 1; ; attempt++ {
		client, err := freeURL()
		if err != nil {
			return nil, err
		}
		peer, err := freeURL()
		if err != nil {
			return nil, err
		}
		ec.ListenClientUrls, ec.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		ec.ListenPeerUrls, ec.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
		// Listeners are opened before anything is written to Dir: a
		// failed bind leaves nothing behind.
		e, err := embed.StartEtcd(ec)
		taken := err != nil && (errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use"))
		if !taken || attempt == bindAttempts {
			return e, err
		}
	}
}

// freeURL is an http URL of a loopback port nobody listens on right now.
func freeURL() (url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// NewForTest starts etcd for t (see Start), with its data in a temporary
// directory unless cfg says otherwise, and closes it when t ends. A failed
// start fails t.
func NewForTest(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	s, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Close stops etcd and waits until it has released its data.
func (s *Server) Close() { s.Etcd.Close() }
