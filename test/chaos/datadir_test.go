package chaos

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A second heaven-server on a data directory in use says so and exits at
// once, instead of waiting on the embedded etcd's lock.
func TestSecondServerOnTheSameDataDir(t *testing.T) {
	srv := newServer(t)
	srv.start(t)
	defer srv.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	began := time.Now()
	out, err := exec.CommandContext(ctx, serverBin(), "--data-dir", srv.dataDir, "--secure-port", "0").CombinedOutput()
	require.Error(t, err)
	require.NoError(t, ctx.Err(), "the second server exits by itself")
	require.Contains(t, string(out), "is in use by another heaven-server (pid "+strconv.Itoa(srv.pid())+")")
	require.Less(t, time.Since(began), 10*time.Second)
}
