package conformance

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/etcdv3"
)

// conformanceBranch is the one branch the facade serves in these tests.
const conformanceBranch = "conformance"

// startGitFacade opens a fresh repository, serves it through the etcd v3
// facade in single-branch mode on a loopback port, and returns the client
// URL. Everything is stopped when t ends.
func startGitFacade(t testing.TB, opts backendOptions) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "heavens.git")
	repo, err := gitstore.Open(dir, gitstore.Options{})
	if err != nil {
		t.Fatalf("opening %s: %v", dir, err)
	}
	srv, err := etcdv3.NewServer(repo, etcdv3.Config{
		Branch:                 conformanceBranch,
		ProgressNotifyInterval: opts.progressNotifyInterval,
		RepositoryPath:         dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := etcdv3.Listen("http://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	// Cleanups run last-in first-out: the clients registered after this
	// close first, then the server stops, then the repository.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("facade shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("facade serve: %v", err)
		}
		if err := repo.Close(); err != nil {
			t.Errorf("closing the repository: %v", err)
		}
	})
	return etcdv3.ListenerURL(l)
}
