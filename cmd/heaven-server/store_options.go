package main

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
)

// StoreOptions are the flags of "heaven-server store".
type StoreOptions struct {
	DataDir                string
	ListenClientURLs       []string
	AdvertiseClientURLs    []string
	Branch                 string
	ProgressNotifyInterval time.Duration
	MaxTxnOps              int
	MaxRequestBytes        int
	ShutdownTimeout        time.Duration
}

// NewStoreOptions returns the defaults (etcd's where etcd has one).
func NewStoreOptions() *StoreOptions {
	return &StoreOptions{
		DataDir:                "./.heaven",
		ListenClientURLs:       []string{"http://127.0.0.1:2379"},
		ProgressNotifyInterval: etcdv3.DefaultProgressNotifyInterval,
		MaxTxnOps:              etcdv3.DefaultMaxTxnOps,
		MaxRequestBytes:        etcdv3.DefaultMaxRequestBytes,
		ShutdownTimeout:        30 * time.Second,
	}
}

func (o *StoreOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of Heaven's data. The bare git repository is <data-dir>/heavens.git, created when missing.")
	fs.StringSliceVar(&o.ListenClientURLs, "listen-client-urls", o.ListenClientURLs,
		"Comma-separated URLs to serve the etcd v3 API on: http://HOST:PORT (TCP; port 0 picks one) or "+
			"unix:///ABSOLUTE/PATH (unix socket). TLS is not supported yet.")
	fs.StringSliceVar(&o.AdvertiseClientURLs, "advertise-client-urls", o.AdvertiseClientURLs,
		"Comma-separated client URLs reported to clients by MemberList (clients with endpoint auto-sync use them). "+
			"Default: the listen URLs.")
	fs.StringVar(&o.Branch, "branch", o.Branch,
		"Serve only this branch as the whole keyspace (single-branch mode, what a stock kube-apiserver expects). "+
			"Empty: prefix mode, where the first component of every key (/BRANCH/...) selects the branch.")
	fs.DurationVar(&o.ProgressNotifyInterval, "progress-notify-interval", o.ProgressNotifyInterval,
		"How often watches created with progress_notify receive a progress notification when idle "+
			"(etcd's --watch-progress-notify-interval). Minimum 100ms.")
	fs.IntVar(&o.MaxTxnOps, "max-txn-ops", o.MaxTxnOps,
		"Maximum number of operations in a transaction (etcd's --max-txn-ops).")
	fs.IntVar(&o.MaxRequestBytes, "max-request-bytes", o.MaxRequestBytes,
		"Maximum size in bytes of a write request (etcd's --max-request-bytes).")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout,
		"On SIGINT or SIGTERM, how long to wait for requests in flight before cutting them off. "+
			"Watch and lease keepalive streams are ended at once; clients reconnect.")
}

// Complete makes the data directory absolute.
func (o *StoreOptions) Complete() error {
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return fmt.Errorf("--data-dir: %w", err)
	}
	o.DataDir = abs
	return nil
}

// Validate returns every problem with the options at once.
func (o *StoreOptions) Validate() []error {
	var errs []error
	if o.DataDir == "" {
		errs = append(errs, fmt.Errorf("--data-dir must not be empty"))
	}
	if len(o.ListenClientURLs) == 0 {
		errs = append(errs, fmt.Errorf("--listen-client-urls must name at least one URL"))
	}
	for _, u := range o.ListenClientURLs {
		if err := validateClientURL(u, true); err != nil {
			errs = append(errs, fmt.Errorf("--listen-client-urls: %w", err))
		}
	}
	for _, u := range o.AdvertiseClientURLs {
		if err := validateClientURL(u, false); err != nil {
			errs = append(errs, fmt.Errorf("--advertise-client-urls: %w", err))
		}
	}
	if o.Branch != "" {
		if err := gitstore.ValidateBranchName(o.Branch); err != nil {
			errs = append(errs, fmt.Errorf("--branch: %w", err))
		}
	}
	if o.ProgressNotifyInterval < etcdv3.MinProgressNotifyInterval {
		errs = append(errs, fmt.Errorf("--progress-notify-interval must be at least %s", etcdv3.MinProgressNotifyInterval))
	}
	if o.MaxTxnOps < 1 {
		errs = append(errs, fmt.Errorf("--max-txn-ops must be positive"))
	}
	if o.MaxRequestBytes < 1 {
		errs = append(errs, fmt.Errorf("--max-request-bytes must be positive"))
	}
	if o.ShutdownTimeout < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout must not be negative"))
	}
	return errs
}

func validateClientURL(raw string, listen bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	switch u.Scheme {
	case "http":
		if listen && u.Port() == "" {
			return fmt.Errorf("%q has no port", raw)
		}
	case "unix":
		if u.Host+u.Path+u.Opaque == "" {
			return fmt.Errorf("%q names no socket path", raw)
		}
	case "https", "unixs":
		return fmt.Errorf("%q: TLS is not supported yet", raw)
	default:
		return fmt.Errorf("%q: scheme must be http or unix", raw)
	}
	return nil
}

// Config turns validated options into the store's configuration.
func (o *StoreOptions) Config() (*StoreConfig, error) {
	repo := filepath.Join(o.DataDir, repositoryName)
	return &StoreConfig{
		DataDir:          o.DataDir,
		RepositoryPath:   repo,
		ListenClientURLs: o.ListenClientURLs,
		ShutdownTimeout:  o.ShutdownTimeout,
		Etcd: etcdv3.Config{
			Branch:                 o.Branch,
			ProgressNotifyInterval: o.ProgressNotifyInterval,
			MaxTxnOps:              o.MaxTxnOps,
			MaxRequestBytes:        o.MaxRequestBytes,
			RepositoryPath:         repo,
			ClientURLs:             o.AdvertiseClientURLs,
		},
	}, nil
}
