package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func TestStoreOptionsValidate(t *testing.T) {
	cases := []struct {
		name    string
		change  func(o *StoreOptions)
		wantErr string
	}{
		{name: "defaults"},
		{name: "unix socket", change: func(o *StoreOptions) { o.ListenClientURLs = []string{"unix:///tmp/heaven.sock"} }},
		{name: "no listen URL", change: func(o *StoreOptions) { o.ListenClientURLs = nil }, wantErr: "at least one URL"},
		{name: "https", change: func(o *StoreOptions) { o.ListenClientURLs = []string{"https://127.0.0.1:2379"} }, wantErr: "TLS"},
		{name: "no port", change: func(o *StoreOptions) { o.ListenClientURLs = []string{"http://127.0.0.1"} }, wantErr: "no port"},
		{name: "bad branch", change: func(o *StoreOptions) { o.Branch = "Team A" }, wantErr: "--branch"},
		{name: "short progress interval", change: func(o *StoreOptions) { o.ProgressNotifyInterval = time.Millisecond }, wantErr: "at least 100ms"},
		{name: "no txn ops", change: func(o *StoreOptions) { o.MaxTxnOps = 0 }, wantErr: "--max-txn-ops"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := NewStoreOptions()
			if tc.change != nil {
				tc.change(o)
			}
			require.NoError(t, o.Complete())
			errs := o.Validate()
			if tc.wantErr == "" {
				require.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			require.ErrorContains(t, errs[0], tc.wantErr)
		})
	}
}

func TestRootCommandRejectsBadFlagsWithEveryProblem(t *testing.T) {
	cmd := NewRootCommand()
	cmd.SetArgs([]string{"--storage=s3", "--bind-address=nowhere", "--data-dir", t.TempDir()})
	cmd.SetOut(new(nopWriter))
	cmd.SetErr(new(nopWriter))
	err := cmd.Execute()
	require.ErrorContains(t, err, "--storage")
	require.ErrorContains(t, err, "--bind-address")
}

type nopWriter struct{}

func (*nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// runStore runs "heaven-server store" with args until the returned stop is
// called; stop returns the command's error.
func runStore(t *testing.T, args ...string) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := NewRootCommand()
	cmd.SetArgs(append([]string{"store"}, args...))
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	return func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(20 * time.Second):
			t.Fatal("store did not stop within 20s")
			return nil
		}
	}
}

func TestStoreServesAndKeepsDataAcrossRestarts(t *testing.T) {
	dataDir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "heaven")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	endpoint := "unix://" + filepath.Join(sockDir, "etcd.sock")
	args := []string{"--data-dir", dataDir, "--listen-client-urls", endpoint + ",http://127.0.0.1:0", "--branch", "main"}

	for run, want := range []string{"", "1"} {
		stop := runStore(t, args...)
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var got string
		require.Eventually(t, func() bool {
			g, err := c.Get(ctx, "/k")
			if err != nil {
				return false
			}
			if len(g.Kvs) > 0 {
				got = string(g.Kvs[0].Value)
			}
			return true
		}, 20*time.Second, 20*time.Millisecond, "run %d: the store does not answer", run)
		require.Equal(t, want, got, "run %d", run)
		_, err = c.Put(ctx, "/k", "1")
		require.NoError(t, err)
		cancel()
		c.Close()
		require.NoError(t, stop())
	}
	require.DirExists(t, filepath.Join(dataDir, "heavens.git"))
}
