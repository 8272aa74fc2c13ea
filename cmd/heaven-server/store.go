package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// NewStoreCommand is "heaven-server store": Options → Complete → Validate →
// Config → Run.
func NewStoreCommand() *cobra.Command {
	o := NewStoreOptions()
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Serve a git repository of heavens through the etcd v3 API",
		Long: `Serve the bare git repository <data-dir>/heavens.git (created when missing)
through the etcd v3 gRPC API, so that etcdctl, etcd clients and a stock
kube-apiserver can use it.

Prefix mode (the default): the first path component of every key names the
branch (the heaven). Key /team-a/registry/pods/default/web is key
/registry/pods/default/web of branch team-a; one request stays in one branch.

  etcdctl --endpoints=http://127.0.0.1:2379 put /team-a/hello world
  kube-apiserver --etcd-servers=http://127.0.0.1:2379 --etcd-prefix=/team-a/registry \
    --etcd-compaction-interval=0

Single-branch mode (--branch NAME): the whole keyspace is one branch; this is
what a stock kube-apiserver expects, compaction included.

  heaven-server store --branch team-a
  kube-apiserver --etcd-servers=http://127.0.0.1:2379`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			cfg, err := o.Config()
			if err != nil {
				return err
			}
			return cfg.Complete().Run(cmd.Context())
		},
	}
	o.AddFlags(cmd.Flags())
	return cmd
}
