package gitrepo

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/stretchr/testify/require"
)

const (
	crashDirEnv  = "GITREPO_CRASH_DIR"
	crashModeEnv = "GITREPO_CRASH_MODE" // "commit": Commit; else Write and CompareAndSwapRef
)

// TestCrashWriter is the process TestKillDuringWrites kills: it writes,
// moves main, runs Maintain, and acknowledges each commit on stdout once
// CompareAndSwapRef (or Commit) returned, forever. With Commit, a small
// journal fills up every few commits, so kills also land in checkpoints.
func TestCrashWriter(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestKillDuringWrites")
	}
	r, err := Open(dir)
	require.NoError(t, err)
	r.maxPacks = 3
	commit := commitFiles
	if os.Getenv(crashModeEnv) == "commit" {
		commit = commitJournaled
		if j := r.journal.Load(); j != nil {
			j.max = journalDataStart + 32<<10
		}
		r.journalMax = journalDataStart + 32<<10
	}
	for i := 0; ; i++ {
		h := commit(t, r, files(30, fmt.Sprintf("w%d-", i)), fmt.Sprintf("%d\n", i))
		fmt.Printf("ack %s\n", h)
		require.NoError(t, r.Maintain())
	}
}

// A process killed (SIGKILL) at any point leaves a repository that git
// fsck accepts, whose main holds every acknowledged commit, and that Open
// cleans up (and, with Commit, recovers from the journal).
func TestKillDuringWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Run("write", func(t *testing.T) { killDuringWrites(t, "write") })
	t.Run("commit", func(t *testing.T) { killDuringWrites(t, "commit") })
}

func killDuringWrites(t *testing.T, mode string) {
	dir := filepath.Join(t.TempDir(), "repo.git")
	var acked []plumbing.Hash
	for round, kills := range []int{1, 7, 13, 20} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashWriter$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashModeEnv+"="+mode)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(out)
		for n := 0; n < kills && lines.Scan(); {
			var hex string
			if _, err := fmt.Sscanf(lines.Text(), "ack %s", &hex); err == nil {
				acked = append(acked, plumbing.NewHash(hex))
				n++
			}
		}
		require.NoError(t, cmd.Process.Kill())
		cmd.Wait()

		r, err := Open(dir) // also proves the lock died with the process
		require.NoError(t, err, "round %d", round)
		head, err := r.Ref(plumbing.Main)
		require.NoError(t, err)
		reachable := map[plumbing.Hash]bool{}
		c, err := object.GetCommit(r.Storer(), head)
		require.NoError(t, err)
		for {
			reachable[c.Hash] = true
			_, err := c.Tree()
			require.NoError(t, err)
			if len(c.ParentHashes) == 0 {
				break
			}
			c, err = c.Parent(0)
			require.NoError(t, err)
		}
		for _, h := range acked {
			require.True(t, reachable[h], "acknowledged commit %s survives", h)
		}
		require.NoError(t, r.Close())
		fsck(t, dir)
		ents, err := os.ReadDir(filepath.Join(dir, "objects/pack"))
		require.NoError(t, err)
		t.Logf("round %d: %d commits acknowledged, %d files in objects/pack", round, len(acked), len(ents))
	}
}
