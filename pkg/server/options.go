package server

import (
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// Storage backends for objects that are not ephemeral.
const (
	StorageGit  = "git"
	StorageEtcd = "etcd"
)

// Options are heaven-server's flags.
type Options struct {
	DataDir      string
	BindAddress  string
	SecurePort   int
	ExternalHost string

	Storage            string
	EtcdServers        []string
	EphemeralResources []string

	// EtcdAPIURLs serve the repository of heavens over the etcd v3 API
	// (etcdapi.go); none: not served.
	EtcdAPIURLs []string
	// EtcdAPILayout names the keys there: EtcdAPILayoutKube or
	// EtcdAPILayoutHeaven.
	EtcdAPILayout string

	// AuthenticationConfig is kube-apiserver's structured authentication
	// configuration file: JWT (OIDC) issuers whose tokens authenticate.
	AuthenticationConfig string

	// Audit is kube-apiserver's audit log options (--audit-policy-file,
	// --audit-log-path, …); every heaven's requests go to one log.
	Audit *genericoptions.AuditOptions

	// Fair sharing of request slots among heavens (fairqueue.go).
	MaxRequestsInflight          int
	MaxRequestsInflightPerHeaven int
	MaxRequestsQueuedPerHeaven   int

	AutoCreateHeavens bool
	// MaxHeavensPerUser bounds the Heavens one user who is not a server
	// administrator may create (0: no bound).
	MaxHeavensPerUser int
	// MaxObjectsPerHeaven bounds the objects a heaven holds for users who
	// are not server administrators (0: no bound).
	MaxObjectsPerHeaven int

	IdleTimeout        time.Duration
	CompactionInterval time.Duration
	ShutdownTimeout    time.Duration

	// GCPercent is the Go collector's target (GOGC) that Run sets for the
	// process unless the GOGC environment variable sets one; 0 leaves Go's
	// default (100). See gcpercent.go.
	GCPercent int

	MergeController bool
	// RemoteController runs the controller of Heavens' git remotes.
	RemoteController bool

	ClusterController bool
	SyncerImage       string
	// DeploymentSplitter splits Deployments labelled heaven.dev/split
	// over the SyncTargets of their heaven.
	DeploymentSplitter bool

	// PreReceiveHook installs the pre-receive hook that refuses pushed
	// files the server would not serve.
	PreReceiveHook bool
	// HookExecutable is the heaven-server binary the hook runs (`hook
	// pre-receive`); set by the heaven-server command. Empty: no hook.
	HookExecutable string
}

// NewOptions returns the defaults: everything embedded, data in ./.heaven.
func NewOptions() *Options {
	return &Options{
		DataDir:                    "./.heaven",
		BindAddress:                "127.0.0.1",
		SecurePort:                 6443,
		Storage:                    StorageGit,
		EtcdAPILayout:              EtcdAPILayoutKube,
		EphemeralResources:         []string{"events", "events.events.k8s.io", "leases.coordination.k8s.io"},
		AutoCreateHeavens:          true,
		IdleTimeout:                5 * time.Minute,
		GCPercent:                  DefaultGCPercent,
		CompactionInterval:         5 * time.Minute,
		ShutdownTimeout:            30 * time.Second,
		MergeController:            true,
		RemoteController:           true,
		ClusterController:          true,
		DeploymentSplitter:         true,
		SyncerImage:                install.DefaultImage,
		PreReceiveHook:             true,
		MaxRequestsQueuedPerHeaven: 200,
		Audit:                      genericoptions.NewAuditOptions(),
		MaxHeavensPerUser:          50,
		MaxObjectsPerHeaven:        100000,
	}
}

// AddFlags registers the options' flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of all state: the git repository of heavens (heavens.git), the embedded etcd (etcd/), certificates (pki/) and admin.kubeconfig. Created when missing.")
	fs.StringVar(&o.BindAddress, "bind-address", o.BindAddress,
		"IP address to serve HTTPS on. Use 0.0.0.0 to serve on every interface.")
	fs.IntVar(&o.SecurePort, "secure-port", o.SecurePort, "Port to serve HTTPS on.")
	fs.StringVar(&o.ExternalHost, "external-hostname", o.ExternalHost,
		"Host name or IP clients use to reach this server: added to the serving certificate and used in admin.kubeconfig. Default: the bind address, or 127.0.0.1 when binding every interface.")
	fs.StringVar(&o.Storage, "storage", o.Storage,
		"Where non-ephemeral objects are stored: 'git' (one branch per heaven in <data-dir>/heavens.git) or 'etcd' (the ephemeral etcd, no history; for comparison benchmarks).")
	fs.StringSliceVar(&o.EtcdServers, "etcd-servers", o.EtcdServers,
		"etcd v3 endpoints (http://host:port) for ephemeral resources. Empty: an etcd embedded in this process, with its data in <data-dir>/etcd.")
	fs.StringSliceVar(&o.EphemeralResources, "ephemeral-resources", o.EphemeralResources,
		"Resources (resource.group; core resources without a group) stored in etcd under a per-heaven prefix and never committed to git.")
	fs.StringSliceVar(&o.EtcdAPIURLs, "etcd-api-urls", o.EtcdAPIURLs,
		"Also serve the heavens' git repository over the etcd v3 API on these URLs: http://127.0.0.1:PORT (loopback only: the etcd API has no authentication; port 0 picks one) or unix:///ABSOLUTE/PATH. "+
			"The first component of every key names the heaven (/team-a/...), so that a stock kube-apiserver can run on a heaven's branch "+
			"(--etcd-servers=URL --etcd-prefix=/team-a/registry --storage-media-type=application/json --etcd-compaction-interval=0) while heavens, merges and remotes work on it. Empty: not served.")
	fs.StringVar(&o.EtcdAPILayout, "etcd-api-layout", o.EtcdAPILayout,
		"Key names of the etcd API: '"+EtcdAPILayoutKube+"' (kube-apiserver's: /team-a/registry/pods/..., /team-a/registry/services/specs/...; objects of built-in resources are where the heaven keeps them) "+
			"or '"+EtcdAPILayoutHeaven+"' (the branch's own: /team-a/core/pods/...).")
	fs.StringVar(&o.AuthenticationConfig, "authentication-config", o.AuthenticationConfig,
		"File with an AuthenticationConfiguration (apiserver.config.k8s.io/v1, as kube-apiserver's --authentication-config takes it): the JWT (OIDC) issuers whose bearer tokens authenticate users, with their claim mappings. Client certificates of the heaven CA always authenticate.")
	fs.IntVar(&o.MaxHeavensPerUser, "max-heavens-per-user", o.MaxHeavensPerUser,
		"Heavens a user who is not a server administrator may create (Heaven objects in root naming them in heaven.dev/created-by); 0: no bound.")
	fs.IntVar(&o.MaxObjectsPerHeaven, "max-objects-per-heaven", o.MaxObjectsPerHeaven,
		"Objects a heaven holds in git (deleted ones count until the next compaction) beyond which its users, but server administrators, can't create more: a heaven's objects are in memory while it runs. Ephemeral resources don't count. 0: no bound.")
	fs.IntVar(&o.MaxRequestsInflight, "max-requests-inflight", o.MaxRequestsInflight,
		"Requests (other than watches) served at once over all heavens; a freed slot goes to the heavens with waiting requests in turn, so that heavens under load can't starve the others. 0: 8 per CPU.")
	fs.IntVar(&o.MaxRequestsInflightPerHeaven, "max-requests-inflight-per-heaven", o.MaxRequestsInflightPerHeaven,
		"Requests of one heaven served at once. 0: --max-requests-inflight.")
	fs.IntVar(&o.MaxRequestsQueuedPerHeaven, "max-requests-queued-per-heaven", o.MaxRequestsQueuedPerHeaven,
		"Requests of one heaven waiting for a slot; more get 429 Too Many Requests with Retry-After.")
	fs.BoolVar(&o.AutoCreateHeavens, "auto-create-heavens", o.AutoCreateHeavens,
		"Start a heaven on the first request to /clusters/<name> even if no Heaven object names it. When false, only 'root' and heavens with a Heaven object in 'root' are served.")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", o.IdleTimeout,
		"Stop a heaven's API server after this long without requests or watches; the next request starts it again. Its data stays.")
	fs.IntVar(&o.GCPercent, "gc-percent", o.GCPercent,
		"Heap growth, in percent of the heap live after a collection, that starts the next one (Go's GOGC). Most of "+
			"heaven-server's heap is the state of running heavens, and each leaves garbage between its objects as it "+
			"starts: a lower value keeps fewer such pages resident, for some CPU. GOGC in the environment, when set, "+
			"wins; 0 leaves Go's default (100).")
	fs.DurationVar(&o.CompactionInterval, "compaction-interval", o.CompactionInterval,
		"How often the history of running heavens is compacted: each time to the revision of the previous run, as kube-apiserver does. Compacted revisions stay in git; only watches and reads at them end. 0 disables.")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout,
		"How long to wait for requests and heavens to finish on SIGTERM.")
	fs.BoolVar(&o.MergeController, "merge-controller", o.MergeController,
		"Run the controller of AutomatedMerge objects (heaven.dev) in the root heaven: merges of heavens' branches into others. Needs --storage=git.")
	fs.BoolVar(&o.RemoteController, "remote-controller", o.RemoteController,
		"Run the controller of git remotes of Heaven objects (spec.remote): fetch the remote branch, merge it into the heaven, push the heaven back, at spec.remote.interval and on every change. Needs --storage=git.")
	fs.BoolVar(&o.ClusterController, "cluster-controller", o.ClusterController,
		"Run the controller of SyncTarget objects (heaven.dev) in the root heaven: it installs each target's syncer in its physical cluster (with the kubeconfig of spec.kubeconfigSecretRef and a credential for the target's heaven only), marks targets Ready while their syncer heartbeats, and uninstalls the syncer when the SyncTarget is deleted.")
	fs.BoolVar(&o.PreReceiveHook, "pre-receive-hook", o.PreReceiveHook,
		"Install a pre-receive hook in <data-dir>/heavens.git that refuses a git push of files the server would not serve (bad JSON or YAML, a file at a path of no object, an object that does not belong at its path), naming each file. Files committed without hooks (git update-ref) are still read safely: a file that can't be served keeps its object's last good version.")
	fs.BoolVar(&o.DeploymentSplitter, "deployment-splitter", o.DeploymentSplitter,
		"Split every Deployment labelled heaven.dev/split into one Deployment per SyncTarget of its heaven (or per target named in its heaven.dev/split-targets annotation), each labelled for its target with a share of the replicas, and sum their status into it. Runs in heavens that SyncTargets point at.")
	fs.StringVar(&o.SyncerImage, "syncer-image", o.SyncerImage,
		"Container image of the syncer that the cluster controller installs (make image builds "+install.DefaultImage+").")
	// --audit-policy-file, --audit-log-path, --audit-webhook-config-file…
	// as kube-apiserver has them.
	o.Audit.AddFlags(fs)
}

// Validate returns every problem of the options.
func (o *Options) Validate() []error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir must not be empty"))
	}
	if net.ParseIP(o.BindAddress) == nil {
		errs = append(errs, fmt.Errorf("--bind-address %q is not an IP address", o.BindAddress))
	}
	if o.SecurePort < 0 || o.SecurePort > 65535 {
		errs = append(errs, fmt.Errorf("--secure-port %d is not a port (0 picks a free one)", o.SecurePort))
	}
	if o.Storage != StorageGit && o.Storage != StorageEtcd {
		errs = append(errs, fmt.Errorf("--storage %q: want %q or %q", o.Storage, StorageGit, StorageEtcd))
	}
	for _, u := range o.EtcdAPIURLs {
		if err := validateEtcdAPIURL(u); err != nil {
			errs = append(errs, fmt.Errorf("--etcd-api-urls: %w", err))
		}
	}
	if o.EtcdAPILayout != EtcdAPILayoutKube && o.EtcdAPILayout != EtcdAPILayoutHeaven {
		errs = append(errs, fmt.Errorf("--etcd-api-layout %q: want %q or %q", o.EtcdAPILayout, EtcdAPILayoutKube, EtcdAPILayoutHeaven))
	}
	if len(o.EtcdAPIURLs) > 0 && o.Storage != StorageGit {
		errs = append(errs, fmt.Errorf("--etcd-api-urls needs --storage=%s: it serves the git repository", StorageGit))
	}
	if o.MaxRequestsInflight < 0 || o.MaxRequestsInflightPerHeaven < 0 || o.MaxRequestsQueuedPerHeaven < 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight, --max-requests-inflight-per-heaven and --max-requests-queued-per-heaven must not be negative"))
	}
	if o.IdleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--idle-timeout must be positive"))
	}
	if o.GCPercent < 0 {
		errs = append(errs, fmt.Errorf("--gc-percent must not be negative"))
	}
	if o.CompactionInterval < 0 {
		errs = append(errs, fmt.Errorf("--compaction-interval must not be negative"))
	}
	errs = append(errs, o.Audit.Validate()...)
	if o.MaxHeavensPerUser < 0 || o.MaxObjectsPerHeaven < 0 {
		errs = append(errs, fmt.Errorf("--max-heavens-per-user and --max-objects-per-heaven must not be negative"))
	}
	if o.ClusterController && o.SyncerImage == "" {
		errs = append(errs, fmt.Errorf("--syncer-image must not be empty"))
	}
	for _, r := range o.EphemeralResources {
		if gr := schema.ParseGroupResource(r); gr.Resource == "" {
			errs = append(errs, fmt.Errorf("--ephemeral-resources: %q names no resource", r))
		}
	}
	return errs
}

// externalHost is the host clients use.
func (o *Options) externalHost() string {
	if o.ExternalHost != "" {
		return o.ExternalHost
	}
	if ip := net.ParseIP(o.BindAddress); ip != nil && ip.IsUnspecified() {
		return "127.0.0.1"
	}
	return o.BindAddress
}
