package gitrepo

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMaintainCheckpoints(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 4
	commitJournaled(t, r, files(3, "a"), "m\n")
	require.NoError(t, r.Maintain())
	gen, seq := epoch(t, r)
	require.Equal(t, uint64(1), gen, "no merge, young records: no checkpoint")
	require.Equal(t, uint64(1), seq)

	r.checkpointAge = 0
	require.NoError(t, r.Maintain())
	gen, seq = epoch(t, r)
	require.Equal(t, uint64(2), gen, "old records: checkpoint")
	require.Zero(t, seq)
	require.NoError(t, r.Maintain())
	gen, _ = epoch(t, r)
	require.Equal(t, uint64(2), gen, "an empty epoch needs none")

	r.checkpointAge = defaultCheckpointAge
	for i := range r.maxPacks + 1 {
		commitJournaled(t, r, files(3, fmt.Sprint("b", i)), "m\n")
		require.NoError(t, r.Flush()) // a pack each
	}
	before := packCount(t, r)
	require.NoError(t, r.Maintain())
	require.Less(t, packCount(t, r), before, "merged")
	gen, seq = epoch(t, r)
	require.Equal(t, uint64(3), gen, "a merge checkpoints")
	require.Zero(t, seq)
	fsck(t, r.Dir())
}
