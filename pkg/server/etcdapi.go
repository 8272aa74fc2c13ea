package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
	"github.com/heaven-dev/heaven/pkg/kubelayout"
)

// Key layouts of the etcd API (--etcd-api-layout).
const (
	// EtcdAPILayoutKube names keys as a stock kube-apiserver does
	// (/<heaven>/registry/pods/…, /<heaven>/registry/services/specs/…).
	EtcdAPILayoutKube = "kube-apiserver"
	// EtcdAPILayoutHeaven names keys as heavens keep them
	// (/<heaven>/core/pods/…, /<heaven>/core/services/…).
	EtcdAPILayoutHeaven = "heaven"
)

// etcdAPI serves the repository of heavens over the etcd v3 API, in prefix
// mode (the first component of a key names the heaven), for stock
// kube-apiservers and etcd tools on the same branches that heavens,
// merges and remotes work on. It has no authentication: it listens on
// loopback or a unix socket only.
type etcdAPI struct {
	server    *etcdv3.Server
	listeners []net.Listener
}

// validateEtcdAPIURL accepts what a local client can reach and nobody else:
// http on a loopback address, or a unix socket.
func validateEtcdAPIURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	switch u.Scheme {
	case "unix":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("%q: the etcd API has no authentication, so it listens on a loopback address (127.0.0.1, [::1], localhost) or a unix socket only", raw)
		}
		if u.Port() == "" {
			return fmt.Errorf("%q has no port (0 picks a free one)", raw)
		}
		return nil
	default:
		return fmt.Errorf("%q: scheme must be http (loopback) or unix", raw)
	}
}

// newEtcdAPI opens the listeners of --etcd-api-urls; nil when there are none.
func (s *Server) newEtcdAPI() (*etcdAPI, error) {
	c := s.cfg
	if len(c.EtcdAPIURLs) == 0 {
		return nil, nil
	}
	if s.repo == nil {
		return nil, errors.New("--etcd-api-urls needs --storage=git")
	}
	cfg := etcdv3.Config{RepositoryPath: filepath.Join(c.DataDir, "heavens.git"), Name: "heaven-server"}
	if c.EtcdAPILayout == EtcdAPILayoutKube {
		keys, err := kubelayout.KeyMap()
		if err != nil {
			return nil, fmt.Errorf("kube-apiserver's key layout: %w", err)
		}
		cfg.Keys = keys
	}
	srv, err := etcdv3.NewServer(s.repo, cfg)
	if err != nil {
		return nil, err
	}
	a := &etcdAPI{server: srv}
	for _, u := range c.EtcdAPIURLs {
		l, err := etcdv3.Listen(u)
		if err != nil {
			a.close()
			return nil, fmt.Errorf("--etcd-api-urls: %w", err)
		}
		a.listeners = append(a.listeners, l)
	}
	return a, nil
}

// URLs are the client URLs of the listeners.
func (a *etcdAPI) URLs() []string {
	var urls []string
	for _, l := range a.listeners {
		urls = append(urls, etcdv3.ListenerURL(l))
	}
	return urls
}

// serve serves every listener; a failure is sent on errs.
func (a *etcdAPI) serve(ctx context.Context, layout string, ephemeral []string, errs chan<- error) {
	for _, l := range a.listeners {
		go func() {
			if err := a.server.Serve(l); err != nil {
				errs <- fmt.Errorf("etcd API on %s: %w", etcdv3.ListenerURL(l), err)
			}
		}()
	}
	example := a.URLs()[0]
	if layout == EtcdAPILayoutKube {
		e := strings.Join(ephemeral, ";")
		klog.FromContext(ctx).Info("Serving heavens over the etcd API", "urls", a.URLs(), "layout", layout,
			"kube-apiserver", fmt.Sprintf("kube-apiserver --etcd-servers=%s --etcd-prefix=/<heaven>/registry --storage-media-type=application/json --etcd-compaction-interval=0 --etcd-servers-overrides='coordination.k8s.io/leases#%s,/events#%s'", example, e, e))
		return
	}
	klog.FromContext(ctx).Info("Serving heavens over the etcd API", "urls", a.URLs(), "layout", layout,
		"etcdctl", fmt.Sprintf("etcdctl --endpoints=%s get --prefix /<heaven>/core/configmaps/", example))
}

// shutdown stops serving: requests in flight end within ctx.
func (a *etcdAPI) shutdown(ctx context.Context) {
	if err := a.server.Shutdown(ctx); err != nil {
		klog.ErrorS(err, "Shutting down the etcd API")
	}
}

// close closes listeners that were never served.
func (a *etcdAPI) close() {
	for _, l := range a.listeners {
		_ = l.Close()
	}
}

// EtcdAPIURLs are the client URLs of the etcd API (--etcd-api-urls, with
// the ports picked for port 0); none when it is not served.
func (s *Server) EtcdAPIURLs() []string {
	if s.etcdAPI == nil {
		return nil
	}
	return s.etcdAPI.URLs()
}

// EphemeralEtcdURLs are the endpoints of the etcd of ephemeral resources:
// where a kube-apiserver on a heaven's branch keeps its Leases and Events
// (--etcd-servers-overrides), so that they stay out of git.
func (s *Server) EphemeralEtcdURLs() []string {
	if s.etcd.embedded != nil {
		return []string{s.etcd.endpoint}
	}
	return s.cfg.EtcdServers
}
