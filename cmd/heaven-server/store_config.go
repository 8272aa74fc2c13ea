package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
)

// repositoryName is the bare repository inside --data-dir.
const repositoryName = "heavens.git"

// StoreConfig is what "heaven-server store" runs.
type StoreConfig struct {
	DataDir          string
	RepositoryPath   string
	ListenClientURLs []string
	ShutdownTimeout  time.Duration
	Etcd             etcdv3.Config
}

// CompletedStoreConfig can only be made by Complete.
type CompletedStoreConfig struct{ *completedStoreConfig }

type completedStoreConfig struct{ StoreConfig }

// Complete fills what the options leave open.
func (c *StoreConfig) Complete() CompletedStoreConfig {
	return CompletedStoreConfig{&completedStoreConfig{*c}}
}

// Run opens the repository, serves the etcd API on every listen URL and
// shuts down cleanly when ctx ends (SIGINT, SIGTERM).
func (c CompletedStoreConfig) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return fmt.Errorf("creating --data-dir: %w", err)
	}
	repo, err := gitstore.Open(c.RepositoryPath, gitstore.Options{})
	if err != nil {
		return fmt.Errorf("opening %s: %w", c.RepositoryPath, err)
	}
	defer func() {
		if err := repo.Close(); err != nil {
			logger.Error(err, "Closing the repository failed")
		}
		logger.Info("Stopped")
	}()
	srv, err := etcdv3.NewServer(repo, c.Etcd)
	if err != nil {
		return err
	}
	listeners, err := listenAll(c.ListenClientURLs)
	if err != nil {
		return err
	}

	served := make(chan error, len(listeners))
	var urls []string
	for _, l := range listeners {
		urls = append(urls, etcdv3.ListenerURL(l))
		go func() { served <- srv.Serve(l) }()
	}
	c.logHowToConnect(logger, urls)

	var serveErr error
	select {
	case <-ctx.Done():
		logger.Info("Shutting down", "timeout", c.ShutdownTimeout)
	case serveErr = <-served:
		logger.Error(serveErr, "Serving failed; shutting down")
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		logger.Info("Requests still in flight were cut off", "err", err)
	}
	return serveErr
}

func listenAll(urls []string) ([]net.Listener, error) {
	var ls []net.Listener
	for _, u := range urls {
		l, err := etcdv3.Listen(u)
		if err != nil {
			for _, open := range ls {
				open.Close()
			}
			return nil, errors.Join(fmt.Errorf("--listen-client-urls"), err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// logHowToConnect says where the API is served and how to point etcdctl and
// a kube-apiserver at it.
func (c CompletedStoreConfig) logHowToConnect(logger klog.Logger, urls []string) {
	endpoints := urls[0] // any one will do
	if c.Etcd.Branch != "" {
		logger.Info("Serving the etcd v3 API for one branch", "branch", c.Etcd.Branch,
			"repository", c.RepositoryPath, "urls", urls)
		logger.Info("Connect with",
			"etcdctl", fmt.Sprintf("etcdctl --endpoints=%s get / --prefix", endpoints),
			"kube-apiserver", fmt.Sprintf("kube-apiserver --etcd-servers=%s", endpoints))
		return
	}
	logger.Info("Serving the etcd v3 API, one branch per first key component (/BRANCH/...)",
		"repository", c.RepositoryPath, "urls", urls)
	logger.Info("Connect with",
		"etcdctl", fmt.Sprintf("etcdctl --endpoints=%s get /team-a/ --prefix", endpoints),
		"kube-apiserver", fmt.Sprintf("kube-apiserver --etcd-servers=%s --etcd-prefix=/team-a/registry --etcd-compaction-interval=0", endpoints),
		"note", "compaction is per branch: run another heaven-server store --branch team-a for a kube-apiserver that compacts")
}
