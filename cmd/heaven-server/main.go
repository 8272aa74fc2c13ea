// Command heaven-server serves many Kubernetes API servers ("heavens") under
// /clusters/<name>, each stored on its own git branch; its "store"
// subcommand serves the git repository through the etcd v3 API alone.
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
	err := NewRootCommand().ExecuteContext(ctx)
	stop()
	klog.Flush()
	if err != nil {
		os.Exit(1)
	}
}
