// Package heaven is the kubectl plugin of heaven-server (kubectl-heaven):
// commands for heavens that work through the API only, with the user's
// kubeconfig and credentials, as kcp's `kubectl ws` does for workspaces.
package heaven

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	heavenclient "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/typed/heaven/v1alpha1"
)

// Streams are the command's input and outputs.
type Streams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// rootHeaven holds the Heaven objects.
const rootHeaven = "root"

// NewCommand is `kubectl heaven`.
func NewCommand(streams Streams) *cobra.Command {
	o := &options{streams: streams, rules: clientcmd.NewDefaultClientConfigLoadingRules()}
	cmd := &cobra.Command{
		Use:   "kubectl heaven",
		Short: "Work with heavens: the logical clusters of a heaven-server",
		Long: `kubectl heaven works with the heavens of the heaven-server that the current
kubeconfig context points at (https://HOST:PORT/clusters/<name>), through the API
and with your own credentials.

  kubectl heaven list                      every heaven, with phase, revision and head
  kubectl heaven current                   the heaven of the current context
  kubectl heaven use team-a                point the current context at heaven team-a
  kubectl heaven use -                     back to the heaven before
  kubectl heaven create try --fork team-a  a new heaven, forked from team-a's branch
  kubectl heaven delete try                delete the Heaven object (and stop serving it)
  kubectl heaven log [-- core/configmaps/] the heaven's commits (optionally only under paths)
  kubectl heaven diff @12                  the objects changed since revision 12
  kubectl heaven revert 13                 undo the commit of revision 13 (or a commit hash)
  kubectl heaven restore configmap/web --to 12
                                           put one object back as it was at revision 12
  kubectl heaven merge try --dry-run       what merging heaven try in once would change`,
		SilenceUsage: true,
	}
	// kubectl's own connection flags, as kubectl passes them to a plugin.
	cmd.PersistentFlags().StringVar(&o.rules.ExplicitPath, "kubeconfig", "", "Path to the kubeconfig file to use.")
	clientcmd.BindOverrideFlags(&o.overrides, cmd.PersistentFlags(), clientcmd.RecommendedConfigOverrideFlags(""))
	cmd.AddCommand(o.listCommand(), o.currentCommand(), o.useCommand(), o.createCommand(), o.deleteCommand(),
		o.logCommand(), o.diffCommand(), o.revertCommand(), o.restoreCommand(), o.mergeCommand())
	return cmd
}

// options are what every subcommand shares.
type options struct {
	rules     *clientcmd.ClientConfigLoadingRules
	overrides clientcmd.ConfigOverrides
	streams   Streams
}

// loader reads the kubeconfig as kubectl would with the same flags.
func (o *options) loader() clientcmd.ClientConfig {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.rules, &o.overrides)
}

// location is where the current context points: heaven-server's base URL
// and the heaven.
type location struct {
	base, heaven string
}

func (o *options) location() (location, error) {
	cfg, err := o.loader().ClientConfig()
	if err != nil {
		return location{}, err
	}
	base, name, err := heavenURL(cfg.Host)
	if err != nil {
		return location{}, err
	}
	if name == "" {
		return location{}, fmt.Errorf("the current context's server %s is not a heaven (https://HOST:PORT%s<name>)", cfg.Host, clustersPrefix)
	}
	return location{base: base, heaven: name}, nil
}

// heavenConfig is the current credentials' config for heaven name.
func (o *options) heavenConfig(name string) (*rest.Config, error) {
	cfg, err := o.loader().ClientConfig()
	if err != nil {
		return nil, err
	}
	loc, err := o.location()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Host = withHeaven(loc.base, name)
	return cfg, nil
}

// heavens are the Heavens of the root heaven.
func (o *options) heavens() (heavenclient.HeavenInterface, error) {
	cfg, err := o.heavenConfig(rootHeaven)
	if err != nil {
		return nil, err
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return client.HeavenV1alpha1().Heavens(), nil
}

func commandContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
