package main

import (
	"errors"
	goflag "flag"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"
)

// NewRootCommand is heaven-server. Run without a subcommand it explains that
// the Kubernetes API server is not built yet; "store" serves the storage.
func NewRootCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "heaven-server",
		Short: "Heaven: a multi-tenant Kubernetes API server whose storage is git",
		Long: `Heaven is a multi-tenant Kubernetes API server whose storage is git:
every logical cluster ("heaven") lives on its own git branch.

The Kubernetes API server is not built yet; running heaven-server without a
subcommand will start it once it is. Today, run the storage layer on its own:

  heaven-server store --data-dir ./.heaven

and point etcdctl or a kube-apiserver at it (see heaven-server store --help).`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return errors.New(`the Kubernetes API server is not built yet: run "heaven-server store" to serve the etcd v3 API (see heaven-server --help)`)
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	// klog's flags (-v, --vmodule, ...) on every command.
	gofs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gofs)
	cmd.PersistentFlags().AddGoFlagSet(gofs)
	cmd.AddCommand(NewStoreCommand())
	return cmd
}
