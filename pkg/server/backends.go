package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	clientv3k "go.etcd.io/etcd/client/v3/kubernetes"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// openGitStore opens the repository of heavens. Each heaven reaches its
// branch through a client of its own with no network step
// (storage.NewBranchClient); the merge, remote and compaction code calls the
// store directly. opts carries what heaven-server hooks into the store
// (OnHead, ReadFile, OnProblems); the commit metrics are added here.
func openGitStore(dir string, m *metrics, opts gitstore.Options) (*gitstore.Repository, error) {
	opts.OnCommit = func(_ string, requests int, took time.Duration) {
		m.gitCommits.Inc()
		m.gitCommitWrites.Add(float64(requests))
		m.gitCommitTime.Observe(took.Seconds())
	}
	repo, err := gitstore.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	return repo, nil
}

// etcdBackend is the etcd of ephemeral resources: embedded or external.
type etcdBackend struct {
	embedded *embed.Etcd
	endpoint string // of the embedded etcd
	client   *clientv3k.Client
}

func startEtcdBackend(dir string, servers []string) (*etcdBackend, error) {
	b := &etcdBackend{}
	if len(servers) == 0 {
		e, endpoint, err := startEmbeddedEtcd(dir)
		if err != nil {
			return nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
		}
		b.embedded, b.endpoint, servers = e, endpoint, []string{endpoint}
	}
	client, err := newEtcdClient(servers)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("connecting to etcd %v: %w", servers, err)
	}
	b.client = client
	return b, nil
}

func (b *etcdBackend) close() {
	if b.client != nil {
		_ = b.client.Close()
	}
	if b.embedded != nil {
		b.embedded.Close()
	}
}

// probeKey is read to check that etcd answers (it never exists).
const probeKey = "/heaven-probe"

func newEtcdClient(endpoints []string, dial ...grpc.DialOption) (*clientv3k.Client, error) {
	c, err := clientv3k.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          20 * time.Second,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		DialOptions:          dial,
		Logger:               zap.NewNop(),
		// Large lists of a heaven travel in one response.
		MaxCallRecvMsgSize: 256 << 20,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.KV.Get(ctx, probeKey); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// startEmbeddedEtcd runs a single-member etcd on loopback ports, its data in
// dir. It compacts its own history (5 minutes kept), as kube-apiserver would
// ask it to.
func startEmbeddedEtcd(dir string) (*embed.Etcd, string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", err
	}
	cfg := embed.NewConfig()
	cfg.Name = "heaven"
	cfg.Dir = filepath.Clean(dir)
	client, peer := freeURL(), freeURL()
	if client.Host == "" || peer.Host == "" {
		return nil, "", errors.New("no free loopback port")
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "5m"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, "", errors.New("not ready after 60s")
	}
	return e, client.String(), nil
}

func freeURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}
