package etcdv3

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestServeOnAUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "heaven") // socket paths must be short
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	endpoint, _ := startServer(t, Config{Branch: "main"}, "unix://"+filepath.Join(dir, "etcd.sock"))
	require.Equal(t, "unix://"+filepath.Join(dir, "etcd.sock"), endpoint)

	c := newClient(t, endpoint)
	ctx := testContext(t)
	_, err = c.Put(ctx, "/u", "1")
	require.NoError(t, err)
	g, err := c.Get(ctx, "/u")
	require.NoError(t, err)
	require.Equal(t, "1", string(g.Kvs[0].Value))
}

func TestListenRejectsUnsupportedURLs(t *testing.T) {
	for _, u := range []string{"https://127.0.0.1:2379", "http://127.0.0.1", "tcp://127.0.0.1:2379", "unix://"} {
		_, err := Listen(u)
		require.Error(t, err, u)
	}
}

func TestShutdownEndsWatchStreams(t *testing.T) {
	repo, dir := openRepo(t)
	srv, err := NewServer(repo, Config{Branch: "main", RepositoryPath: dir})
	require.NoError(t, err)
	l, err := Listen("http://127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	c := newClient(t, ListenerURL(l))
	stream, err := pb.NewWatchClient(c.ActiveConnection()).Watch(testContext(t))
	require.NoError(t, err)
	require.NoError(t, stream.Send(&pb.WatchRequest{RequestUnion: &pb.WatchRequest_CreateRequest{
		CreateRequest: &pb.WatchCreateRequest{Key: []byte("/x")}}}))
	created, err := stream.Recv()
	require.NoError(t, err)
	require.True(t, created.Created)

	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	start := time.Now()
	require.NoError(t, srv.Shutdown(ctx), "graceful stop waits for no stream")
	require.Less(t, time.Since(start), 5*time.Second)
	require.NoError(t, <-served)

	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "err: %v", err)
}

func TestNewServerRejectsABadConfig(t *testing.T) {
	for _, cfg := range []Config{{Branch: "Not A Branch"}, {MaxTxnOps: -1}} {
		_, err := newServer(nil, cfg)
		require.Error(t, err, "%+v", cfg)
	}
}
