package main

import (
	"context"
	"errors"
	goflag "flag"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/server"
)

// NewRootCommand is heaven-server: Options → Validate → Config → Complete →
// New → Run.
func NewRootCommand() *cobra.Command {
	o := server.NewOptions()
	// The pre-receive hook runs this very binary.
	if exe, err := os.Executable(); err == nil {
		o.HookExecutable = exe
	}
	cmd := &cobra.Command{
		Use:   "heaven-server",
		Short: "Heaven: a multi-tenant Kubernetes API server whose storage is git",
		Long: `Heaven is a multi-tenant Kubernetes API server whose storage is git.

heaven-server serves many logical clusters ("heavens") over one HTTPS port:
https://HOST:PORT/clusters/<name> is a full Kubernetes API of its own, with its
own CRDs, namespaces and objects. Every object of a heaven is a file on the git
branch <name> of <data-dir>/heavens.git, and every write a commit.

On first start it creates a certificate authority, a serving certificate and
admin credentials in <data-dir>/pki and writes <data-dir>/admin.kubeconfig:

  heaven-server --data-dir ./.heaven
  export KUBECONFIG=./.heaven/admin.kubeconfig
  kubectl --server https://127.0.0.1:6443/clusters/team-a create configmap x --from-literal=a=b
  git --git-dir ./.heaven/heavens.git log team-a

Heavens start on their first request and stop after --idle-timeout without
use. Events and leases are ephemeral: they live in an embedded etcd (or
--etcd-servers), never in git.

"heaven-server store" serves the git repository through the etcd v3 API alone,
for etcd clients and stock kube-apiservers. "heaven-server syncer-manifests"
prints what installs a syncer in a physical cluster.`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if errs := o.Validate(); len(errs) > 0 {
				return errors.Join(errs...)
			}
			cfg, err := o.Config()
			if err != nil {
				return err
			}
			go exitAfterShutdownTimeout(cmd.Context(), o.ShutdownTimeout)
			s, err := cfg.Complete().New()
			if err != nil {
				return err
			}
			return s.Run(cmd.Context())
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	o.AddFlags(cmd.Flags())
	// klog's flags (-v, --vmodule, ...) on every command.
	gofs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gofs)
	cmd.PersistentFlags().AddGoFlagSet(gofs)
	cmd.AddCommand(NewStoreCommand())
	cmd.AddCommand(NewSyncerManifestsCommand())
	cmd.AddCommand(NewHookCommand())
	cmd.AddCommand(NewKubeconfigCommand())
	return cmd
}

// exitAfterShutdownTimeout ends the process if it is still running
// shutdownTimeout (and a little) after SIGTERM or SIGINT, whatever it
// waits for: a signal must always end heaven-server.
func exitAfterShutdownTimeout(ctx context.Context, shutdownTimeout time.Duration) {
	<-ctx.Done()
	timer := time.NewTimer(shutdownTimeout + 5*time.Second)
	defer timer.Stop()
	<-timer.C
	klog.ErrorS(nil, "Still running after the shutdown timeout; exiting", "shutdownTimeout", shutdownTimeout)
	klog.Flush()
	os.Exit(1)
}
