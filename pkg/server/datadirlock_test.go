package server

import (
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDataDir(dir)
	require.NoError(t, err)
	_, err = lockDataDir(dir)
	require.ErrorContains(t, err, "is in use by another heaven-server (pid "+strconv.Itoa(os.Getpid())+")")
	require.NoError(t, first.Close())
	again, err := lockDataDir(dir)
	require.NoError(t, err, "a released directory can be taken")
	require.NoError(t, again.Close())
}
