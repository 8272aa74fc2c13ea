package syncer

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// Options are the syncer's flags.
type Options struct {
	UpstreamKubeconfig   string
	UpstreamContext      string
	DownstreamKubeconfig string
	DownstreamContext    string
	Heaven               string
	SyncTarget           string
	SyncTargetServer     string
	Resources            []string

	HeartbeatInterval  time.Duration
	TypeResyncInterval time.Duration
	Workers            int
	QPS                float32
	Burst              int
	MetricsBindAddress string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		HeartbeatInterval:  v1alpha1.DefaultHeartbeatInterval,
		TypeResyncInterval: time.Minute,
		// A new object costs two requests to the physical cluster (a
		// lookup, then the apply): 1,000 objects sync in about 5 s at
		// these rates (make bench-syncer), 18 s at 100/s.
		Workers:            8,
		QPS:                300,
		Burst:              600,
		MetricsBindAddress: ":8080",
	}
}

// AddFlags registers the options' flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.UpstreamKubeconfig, "upstream-kubeconfig", o.UpstreamKubeconfig,
		"Kubeconfig of the heaven to sync from; its server URL ends in /clusters/<heaven>. Required.")
	fs.StringVar(&o.UpstreamContext, "upstream-context", o.UpstreamContext,
		"Context of --upstream-kubeconfig to use; its current context when empty.")
	fs.StringVar(&o.DownstreamKubeconfig, "downstream-kubeconfig", o.DownstreamKubeconfig,
		"Kubeconfig of the physical cluster to sync to. Empty: the in-cluster configuration (the syncer runs in that cluster).")
	fs.StringVar(&o.DownstreamContext, "downstream-context", o.DownstreamContext,
		"Context of --downstream-kubeconfig to use; its current context when empty.")
	fs.StringVar(&o.Heaven, "heaven", o.Heaven,
		"Name of the upstream heaven, used in downstream namespace names and owner labels. Empty: the <heaven> of the upstream server URL.")
	fs.StringVar(&o.SyncTarget, "sync-target", o.SyncTarget,
		"Name of the SyncTarget (in the root heaven) that this syncer serves: it syncs the heaven's objects labelled heaven.dev/cluster=<name> and heartbeats into the SyncTarget's status. Required.")
	fs.StringVar(&o.SyncTargetServer, "sync-target-server", o.SyncTargetServer,
		"URL of the heaven holding the SyncTarget, reached with the credentials of --upstream-kubeconfig. Empty: the upstream server URL with /clusters/<heaven> replaced by /clusters/root.")
	fs.StringSliceVar(&o.Resources, "resources", o.Resources,
		"Resources to sync, each resource.group (core resources without a group), e.g. configmaps,deployments.apps. Added to the SyncTarget's spec.resources.")
	fs.DurationVar(&o.HeartbeatInterval, "heartbeat-interval", o.HeartbeatInterval,
		"How often the syncer writes its heartbeat (and object counts) into the SyncTarget's status, unless the SyncTarget's spec.heartbeatInterval says otherwise.")
	fs.DurationVar(&o.TypeResyncInterval, "type-resync-interval", o.TypeResyncInterval,
		"How often the requested resources are looked up again on both sides (new CRDs in the cluster, types that could not be synced before). Changes of the SyncTarget's spec.resources are acted on at once.")
	fs.IntVar(&o.Workers, "workers", o.Workers, "Objects reconciled in parallel.")
	fs.Float32Var(&o.QPS, "qps", o.QPS, "Requests per second to each side (client-side rate limit).")
	fs.IntVar(&o.Burst, "burst", o.Burst, "Burst of requests to each side above --qps.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		"host:port to serve /healthz, /readyz and /metrics (Prometheus) on over HTTP. Empty disables them.")
}

// Validate returns every problem of the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.UpstreamKubeconfig == "" {
		errs = append(errs, fmt.Errorf("--upstream-kubeconfig is required"))
	}
	if o.SyncTarget == "" {
		errs = append(errs, fmt.Errorf("--sync-target is required"))
	} else if msgs := validation.IsDNS1123Label(o.SyncTarget); len(msgs) > 0 || len(o.SyncTarget) > 56 {
		errs = append(errs, fmt.Errorf("--sync-target %q must be a DNS label of at most 56 characters %v", o.SyncTarget, msgs))
	}
	if o.Heaven != "" {
		if msgs := validation.IsDNS1123Label(o.Heaven); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--heaven %q: %v", o.Heaven, msgs))
		}
	}
	for _, r := range o.Resources {
		if err := ValidateResource(r); err != nil {
			errs = append(errs, fmt.Errorf("--resources: %w", err))
		}
	}
	if o.HeartbeatInterval <= 0 {
		errs = append(errs, fmt.Errorf("--heartbeat-interval must be positive"))
	}
	if o.TypeResyncInterval <= 0 {
		errs = append(errs, fmt.Errorf("--type-resync-interval must be positive"))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("--workers must be at least 1"))
	}
	if o.QPS <= 0 || o.Burst < 1 {
		errs = append(errs, fmt.Errorf("--qps and --burst must be positive"))
	}
	return errs
}

// ValidateResource checks a resource.group string.
func ValidateResource(r string) error { return v1alpha1.ValidateResource(r) }
