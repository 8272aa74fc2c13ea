// Command kubectl-heaven is the kubectl plugin of heaven-server: `kubectl
// heaven list | current | use | create | delete` for heavens, through the
// API and the user's own kubeconfig.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/heaven-dev/heaven/pkg/cli/heaven"
)

func main() {
	os.Exit(cli.Run(heaven.NewCommand(heaven.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})))
}
