package heaven

import (
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// currentCluster is the cluster entry `use` points the current context at,
// so that other contexts sharing the original cluster entry stay as they
// are.
const currentClusterName = "heaven.dev/current"

func (o *options) useCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "use NAME | -",
		Short: "Point the current kubeconfig context at heaven NAME (- : the heaven before)",
		Long: `use points the current context at another heaven of the same heaven-server: it
writes the heaven's URL into a cluster entry of its own (heaven.dev/current, a copy
of the context's cluster) and remembers the heaven before in the context
heaven.dev/previous, which "use -" goes back to.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			loader := o.loader()
			raw, ctxName, cluster, err := currentCluster(loader)
			if err != nil {
				return err
			}
			base, from, err := heavenURL(cluster.Server)
			if err != nil {
				return err
			}
			if from == "" {
				return fmt.Errorf("the current context's server %s is not a heaven (https://HOST:PORT%s<name>)", cluster.Server, clustersPrefix)
			}
			to := args[0]
			if to == "-" {
				prev, ok := raw.Clusters[previousContext]
				if !ok {
					return fmt.Errorf("no heaven to go back to")
				}
				if _, to, err = heavenURL(prev.Server); err != nil || to == "" {
					return fmt.Errorf("the previous heaven's URL %s is not a heaven", prev.Server)
				}
			}
			if to != from && to != rootHeaven {
				heavens, err := o.heavens()
				if err != nil {
					return err
				}
				if _, err := heavens.Get(commandContext(cmd), to, metav1.GetOptions{}); apierrors.IsNotFound(err) {
					return fmt.Errorf("no heaven %s (kubectl heaven create %s)", to, to)
				} else if err != nil {
					return err
				}
			}
			point(raw, ctxName, cluster, withHeaven(base, to), withHeaven(base, from))
			if err := clientcmd.ModifyConfig(loader.ConfigAccess(), *raw, true); err != nil {
				return err
			}
			fmt.Fprintf(o.streams.Out, "Current heaven is %q (was %q).\n", to, from)
			return nil
		},
	}
}

// point makes context ctxName use a copy of cluster whose server is url,
// and keeps the previous URL in the previous context and cluster.
func point(raw *clientcmdapi.Config, ctxName string, cluster *clientcmdapi.Cluster, url, previous string) {
	ctx := raw.Contexts[ctxName]
	prev := cluster.DeepCopy()
	prev.Server = previous
	raw.Clusters[previousContext] = prev
	prevCtx := ctx.DeepCopy()
	prevCtx.Cluster = previousContext
	raw.Contexts[previousContext] = prevCtx

	cur := cluster.DeepCopy()
	cur.Server = url
	raw.Clusters[currentClusterName] = cur
	ctx.Cluster = currentClusterName
}
