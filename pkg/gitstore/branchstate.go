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
// A revision handed out must not be handed out again after a restart, or a
// watcher resuming from it would miss the writes that reuse it. Git does
// not hold every revision the store gave: writes of keys with leases never
// reach it, and a branch moved back from outside just before a crash, in
// the window before its head was recorded (headstate.go), drops our last
// commits. So before acknowledging a revision above the recorded floor,
// the writer records a new floor a block ahead (one small durable write
// per floorBlock revisions); on open the branch starts at least there, and
// revisions jump ahead by less than a block at each restart. Losing the
// floor file only means that such revisions from before the loss may be
// reused.

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
