package conformance

import (
	"fmt"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"

	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
)

// envBackend selects what the suite talks to: "git" (the default) is the
// gitstore facade in single-branch mode, "etcd" is a real embedded etcd, so
// that the same tests can be compared run for run.
const envBackend = "CONFORMANCE_BACKEND"

const (
	backendGit  = "git"
	backendEtcd = "etcd"
)

// backendName is the backend selected for this run.
func backendName() string {
	switch b := os.Getenv(envBackend); b {
	case "", backendGit:
		return backendGit
	case backendEtcd:
		return backendEtcd
	default:
		panic(fmt.Sprintf("%s=%q: want %q or %q", envBackend, b, backendGit, backendEtcd))
	}
}

func onGit() bool { return backendName() == backendGit }

// backendOptions are the server-side knobs a test needs.
type backendOptions struct {
	// progressNotifyInterval is how often the server sends progress
	// notifications to idle watchers on its own; 0 leaves the default.
	progressNotifyInterval time.Duration
}

// newClient starts a fresh, empty backend for t (stopped when t ends) and
// returns a client to it wrapped in upstream's call recorders, exactly as
// upstream's testserver.RunEtcd returns it.
func newClient(t testing.TB, opts backendOptions) *kubernetes.Client {
	t.Helper()
	if !onGit() {
		cfg := testserver.NewTestConfig(t)
		if opts.progressNotifyInterval != 0 {
			cfg.WatchProgressNotifyInterval = opts.progressNotifyInterval
		}
		return testserver.RunEtcd(t, cfg)
	}
	endpoint := startGitFacade(t, opts)
	client, err := kubernetes.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("connecting to the facade at %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = client.Close() })
	recorder := storagetesting.NewKubernetesRecorder(client.Kubernetes)
	client.KV = storagetesting.NewKVRecorder(client.KV, recorder)
	client.Kubernetes = recorder
	return client
}
