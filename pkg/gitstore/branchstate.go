package gitstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

func (b *Branch) statePath(kind string) string {
	return filepath.Join(b.git.Dir(), "heaven", kind, strings.ReplaceAll(b.name, "/", "%2F"))
}

func (b *Branch) readState(kind string) (int64, error) {
	data, err := os.ReadFile(b.statePath(kind))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", b.statePath(kind), err)
	}
	return n, nil
}

func (b *Branch) writeState(kind string, n int64) error {
	return writeFileDurably(b.statePath(kind), []byte(strconv.FormatInt(n, 10)+"\n"))
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

func writeFileDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
