package gitstore

import (
	"fmt"
	"strconv"
	"strings"
)

// Besides git, a branch keeps two numbers in small files under
// <repo>/heaven/: its revision floor and its compaction point. Both only
// ever grow, and losing either loses no data.
//
// Revisions of writes that git does not hold (keys with leases) must not be
// handed out again after a restart, or a watcher resuming from one would
// miss the writes that reuse it. Before acknowledging such a revision
// above the recorded floor, the writer records a new floor a block ahead;
// on open the branch starts at least there. The floor is the only state
// besides git that the store keeps: losing it only means that leased-key
// revisions from before the loss may be reused.

const floorBlock = 10000

//
// The compaction point is recorded so that a restart does not bring back
// history that clients were told is gone (and does not keep it in memory).

const (
	floorState   = "revision-floor"
	compactState = "compacted"
)

func (b *Branch) stateName(kind string) string {
	return kind + "/" + strings.ReplaceAll(b.name, "/", "%2F")
}

func (b *Branch) readState(kind string) (int64, error) {
	data, err := b.git.ReadState(b.stateName(kind))
	if err != nil || data == nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("state %s: %w", b.stateName(kind), err)
	}
	return n, nil
}

func (b *Branch) writeState(kind string, n int64) error {
	return b.writeStateBytes(kind, []byte(strconv.FormatInt(n, 10)+"\n"))
}

func (b *Branch) writeStateBytes(kind string, data []byte) error {
	return b.git.WriteState(b.stateName(kind), data)
}

// raiseFloor makes sure rev will not be reused after a restart.
func (b *Branch) raiseFloor(rev int64) error {
	if rev <= b.floor {
		return nil
	}
	next := rev + floorBlock
	if err := b.writeState(floorState, next); err != nil {
		return err
	}
	b.floor = next
	return nil
}
