// Command syncer makes a heaven drive a physical cluster: objects of the
// heaven labelled heaven.dev/cluster=<sync target> are copied down into
// the cluster, and what the cluster observes (status) comes back up.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := NewCommand().ExecuteContext(ctx)
	stop()
	klog.Flush()
	if err != nil {
		os.Exit(1)
	}
}
