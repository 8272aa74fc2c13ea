package etcdv3

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/namespace"
	"go.uber.org/zap"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/test/etcdtest"
)

// The API tests run through clientv3 against every target: a real embedded
// etcd (the reference: it proves the tests assert etcd's semantics), and the
// facade over a gitstore repository in single-branch and in prefix mode (the
// latter through a clientv3/namespace client, so the same test code sees the
// same keys).

type target struct {
	name string
	// single: Compact works and revisions are the whole keyspace's.
	single bool
	start  func(t *testing.T, o options) *clientv3.Client
}

type options struct {
	progressNotifyInterval time.Duration
}

const testPrefix = "/team-a"

var targets = []target{
	{name: "etcd", single: true, start: startEtcd},
	{name: "heaven", single: true, start: func(t *testing.T, o options) *clientv3.Client {
		return newClient(t, startHeaven(t, Config{Branch: "main", ProgressNotifyInterval: o.progressNotifyInterval}))
	}},
	{name: "heaven-prefix", start: func(t *testing.T, o options) *clientv3.Client {
		c := newClient(t, startHeaven(t, Config{ProgressNotifyInterval: o.progressNotifyInterval}))
		c.KV = namespace.NewKV(c.KV, testPrefix)
		c.Watcher = namespace.NewWatcher(c.Watcher, testPrefix)
		c.Lease = namespace.NewLease(c.Lease, testPrefix)
		return c
	}},
}

// forEachTarget runs f against every target, each with a fresh server.
func forEachTarget(t *testing.T, o options, f func(t *testing.T, tg target, c *clientv3.Client)) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			f(t, tg, tg.start(t, o))
		})
	}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newClient(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// openRepo opens a fresh repository. A panic in gitstore.Open fails the
// test like any other crash.
func openRepo(t *testing.T) (repo *gitstore.Repository, dir string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "heavens.git")
	repo, err := gitstore.Open(dir, gitstore.Options{PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	return repo, dir
}

// startHeaven serves a fresh repository on a loopback port and returns the
// client URL.
func startHeaven(t *testing.T, cfg Config) string {
	t.Helper()
	endpoint, _ := startServer(t, cfg, "http://127.0.0.1:0")
	return endpoint
}

func startServer(t *testing.T, cfg Config, listenURL string) (string, *Server) {
	t.Helper()
	repo, dir := openRepo(t)
	cfg.RepositoryPath = dir
	srv, err := NewServer(repo, cfg)
	require.NoError(t, err)
	l, err := Listen(listenURL)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.NoError(t, <-served)
	})
	return ListenerURL(l), srv
}

// startEtcd starts a real embedded etcd and returns a client to it.
func startEtcd(t *testing.T, o options) *clientv3.Client {
	t.Helper()
	e := etcdtest.NewForTest(t, etcdtest.Config{ProgressNotifyInterval: o.progressNotifyInterval})
	return newClient(t, e.URL)
}
