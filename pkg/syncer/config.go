package syncer

import (
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Config is a syncer's configuration, from Options.
type Config struct {
	Options
	// Upstream is the heaven's client configuration, Downstream the
	// physical cluster's, Root that of the heaven holding the SyncTarget
	// (Upstream's credentials, --sync-target-server).
	Upstream, Downstream, Root *rest.Config
	// Resources is the --resources flag, parsed.
	Resources []schema.GroupResource
	// MetricsListener serves /healthz and /metrics; nil disables them.
	MetricsListener net.Listener
}

// CompletedConfig is a Config with every default filled in; only Complete
// makes one.
type CompletedConfig struct{ *completedConfig }

type completedConfig struct{ *Config }

// Config loads the kubeconfigs and opens the metrics listener. Call
// Validate first.
func (o *Options) Config() (*Config, error) {
	c := &Config{Options: *o}
	var err error
	if c.Upstream, err = loadKubeconfig(o.UpstreamKubeconfig, o.UpstreamContext); err != nil {
		return nil, fmt.Errorf("--upstream-kubeconfig: %w", err)
	}
	if o.DownstreamKubeconfig == "" {
		c.Downstream, err = rest.InClusterConfig()
	} else {
		c.Downstream, err = loadKubeconfig(o.DownstreamKubeconfig, o.DownstreamContext)
	}
	if err != nil {
		return nil, fmt.Errorf("--downstream-kubeconfig: %w", err)
	}
	if c.Heaven == "" {
		if c.Heaven, err = HeavenFromURL(c.Upstream.Host); err != nil {
			return nil, fmt.Errorf("--heaven not given and %w", err)
		}
	}
	c.Root = rest.CopyConfig(c.Upstream)
	if c.Root.Host = o.SyncTargetServer; c.Root.Host == "" {
		if c.Root.Host, err = RootURL(c.Upstream.Host); err != nil {
			return nil, fmt.Errorf("--sync-target-server not given and %w", err)
		}
	}
	for _, r := range o.Resources {
		c.Resources = append(c.Resources, schema.ParseGroupResource(r))
	}
	if o.MetricsBindAddress != "" {
		if c.MetricsListener, err = net.Listen("tcp", o.MetricsBindAddress); err != nil {
			return nil, fmt.Errorf("--metrics-bind-address: %w", err)
		}
	}
	return c, nil
}

func loadKubeconfig(path, context string) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
		&clientcmd.ConfigOverrides{CurrentContext: context},
	).ClientConfig()
}

// Complete fills in client defaults: rate limits and user agents.
func (c *Config) Complete() CompletedConfig {
	for _, cfg := range []*rest.Config{c.Upstream, c.Downstream, c.Root} {
		cfg.QPS, cfg.Burst = c.QPS, c.Burst
		cfg.UserAgent = "heaven-syncer/" + c.SyncTarget
	}
	return CompletedConfig{&completedConfig{c}}
}

// MetricsAddr is where /healthz and /metrics are served, "" if nowhere.
func (c *Config) MetricsAddr() string {
	if c.MetricsListener == nil {
		return ""
	}
	return c.MetricsListener.Addr().String()
}
