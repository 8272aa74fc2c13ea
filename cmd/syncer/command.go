package main

import (
	"errors"
	goflag "flag"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/syncer"
)

// NewCommand is the syncer: Options → Validate → Config → Complete → New →
// Run.
func NewCommand() *cobra.Command {
	o := syncer.NewOptions()
	cmd := &cobra.Command{
		Use:   "syncer --upstream-kubeconfig HEAVEN.kubeconfig --sync-target NAME [--downstream-kubeconfig CLUSTER.kubeconfig]",
		Short: "Sync a heaven's labelled objects to a physical cluster and their status back",
		Long: `The syncer makes a heaven drive a physical Kubernetes cluster.

It talks to one heaven (--upstream-kubeconfig, whose server URL ends in
/clusters/<heaven>) and to one physical cluster (--downstream-kubeconfig, or
the in-cluster configuration when it runs inside that cluster), on behalf of
the SyncTarget named by --sync-target. SyncTargets live in the root heaven
(/clusters/root on the same server, or --sync-target-server) and name the
heaven they sync in spec.heaven, which must be this syncer's heaven. The
credentials of --upstream-kubeconfig are used for both; the ones heaven-server
issues to a syncer reach only its heaven and its SyncTarget.

For every resource it syncs (--resources plus the SyncTarget's
spec.resources, each resource.group):

  - Objects in the heaven labelled heaven.dev/cluster=<sync target> are
    copied to the cluster, everything but their status, into namespace
    heaven-<hash of heaven, sync target and namespace>, created on demand
    with the heaven and namespace in its labels and annotations.
  - The copies' status is written back to the heaven's objects.
  - Removing or changing the label deletes the copy. Deleting the object in
    the heaven deletes the copy first: the syncer holds the finalizer
    heaven.dev/syncer-<sync target> on every object it syncs.
  - The syncer only touches cluster objects carrying its owner labels
    heaven.dev/heaven and heaven.dev/sync-target.

Types the heaven lacks are taught to it: the cluster's CRD is copied up, and
a built-in type of a dotted group becomes a CRD with the schema from the
cluster's OpenAPI v3. Resources that cannot be synced are reported in the
SyncTarget's status.resources; the others are synced meanwhile.

Every --heartbeat-interval (or the SyncTarget's spec.heartbeatInterval) the
syncer writes its heartbeat, the state of each resource and object counts
into the SyncTarget's status; heaven-server's cluster controller marks the
target not Ready after three intervals without one. /healthz,
/readyz and /metrics are served on --metrics-bind-address.

Example:

  syncer --upstream-kubeconfig team-a.kubeconfig --sync-target east \
    --downstream-kubeconfig east.kubeconfig --resources configmaps,deployments.apps`,
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
			s, err := cfg.Complete().New()
			if err != nil {
				return err
			}
			return s.Run(cmd.Context())
		},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	o.AddFlags(cmd.Flags())
	gofs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(gofs)
	cmd.Flags().AddGoFlagSet(gofs)
	return cmd
}
