package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

// crashed is a repository whose writer died (abandon) after committing c1
// with Commit on top of c0 (written durably): what power loss may leave is
// simulated by damaging files.
type crashed struct {
	dir    string
	c0, c1 plumbing.Hash
	recs   []*record // the journal's current epoch, c1's last
}

func crashAfterCommit(t *testing.T) *crashed {
	r, err := Open(filepath.Join(t.TempDir(), "repo.git"))
	require.NoError(t, err)
	c := &crashed{dir: r.Dir()}
	c.c0 = commitFiles(t, r, files(10, "base-"), "c0\n")
	c.c1 = commitJournaled(t, r, files(10, "next-"), "c1\n")
	require.NoError(t, r.Flush()) // its files there, for the tests to damage
	c.recs, err = readRecords(r.journal.Load())
	require.NoError(t, err)
	abandon(t, r)
	return c
}

func (c *crashed) packFile(ext string) string {
	return packPath(filepath.Join(c.dir, "objects/pack"), c.recs[len(c.recs)-1].pack.sum, ext)
}

func (c *crashed) refFile() string { return filepath.Join(c.dir, "refs/heads/main") }

// reopen opens the repository and checks that c1 is whole and main on it.
func (c *crashed) reopen(t *testing.T) *Repo {
	t.Helper()
	r, err := Open(c.dir)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, c.c1, got)
	require.Contains(t, readFile(t, r, c.c1, "next-0009.json"), `"n": 9`)
	require.Contains(t, readFile(t, r, c.c0, "base-0009.json"), `"n": 9`)
	fsck(t, c.dir)
	return r
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	require.NoError(t, os.Chmod(path, 0o644)) // packs are read-only
	require.NoError(t, os.Truncate(path, size))
}

func TestRecoverRestoresWhatACrashLost(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, c *crashed)
	}{
		{"nothing lost (kill -9)", func(*testing.T, *crashed) {}},
		{"pack missing", func(t *testing.T, c *crashed) { require.NoError(t, os.Remove(c.packFile(".pack"))) }},
		{"pack and index missing", func(t *testing.T, c *crashed) {
			require.NoError(t, os.Remove(c.packFile(".pack")))
			require.NoError(t, os.Remove(c.packFile(".idx")))
		}},
		{"pack truncated", func(t *testing.T, c *crashed) { truncate(t, c.packFile(".pack"), 100) }},
		{"pack empty", func(t *testing.T, c *crashed) { truncate(t, c.packFile(".pack"), 0) }},
		{"index empty", func(t *testing.T, c *crashed) { truncate(t, c.packFile(".idx"), 0) }},
		{"pack zeroed, same size", func(t *testing.T, c *crashed) {
			fi, err := os.Stat(c.packFile(".pack"))
			require.NoError(t, err)
			truncate(t, c.packFile(".pack"), 0)
			truncate(t, c.packFile(".pack"), fi.Size())
		}},
		{"ref empty", func(t *testing.T, c *crashed) { require.NoError(t, os.Truncate(c.refFile(), 0)) }},
		{"ref missing", func(t *testing.T, c *crashed) { require.NoError(t, os.Remove(c.refFile())) }},
		{"ref back at its old value", func(t *testing.T, c *crashed) {
			require.NoError(t, os.WriteFile(c.refFile(), []byte(c.c0.String()+"\n"), 0o644))
		}},
		{"stale ref lock", func(t *testing.T, c *crashed) {
			require.NoError(t, os.WriteFile(c.refFile()+".lock", []byte(c.c1.String()[:10]), 0o644))
		}},
		{"all of it", func(t *testing.T, c *crashed) {
			require.NoError(t, os.Remove(c.packFile(".pack")))
			require.NoError(t, os.Truncate(c.refFile(), 0))
			require.NoError(t, os.WriteFile(c.refFile()+".lock", nil, 0o644))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := crashAfterCommit(t)
			tc.damage(t, c)
			r := c.reopen(t)
			_, err := os.Stat(c.refFile() + ".lock")
			require.True(t, os.IsNotExist(err), "stale lock removed")
			gen, seq := epoch(t, r)
			require.Equal(t, uint64(2), gen, "recovery checkpointed")
			require.Zero(t, seq)

			// The records are stale now: a second crash replays nothing,
			// even when the ref looks like a lost move again.
			abandon(t, r)
			require.NoError(t, os.WriteFile(c.refFile(), []byte(c.c0.String()+"\n"), 0o644))
			r, err = Open(c.dir)
			require.NoError(t, err)
			defer r.Close()
			got, err := r.Ref(plumbing.Main)
			require.NoError(t, err)
			require.Equal(t, c.c0, got)
		})
	}
}

// A record torn by the crash (its Commit never returned) ends the replay:
// its ref move and pack are not restored; those before it are.
func TestRecoverIgnoresTornRecord(t *testing.T) {
	for name, tear := range map[string]func(rec []byte){
		"flipped byte":   func(rec []byte) { rec[len(rec)/2] ^= 1 },
		"zeroed tail":    func(rec []byte) { clear(rec[len(rec)/2:]) },
		"header missing": func(rec []byte) { clear(rec[:recordHeaderLen]) },
	} {
		t.Run(name, func(t *testing.T) {
			c := crashAfterCommit(t)
			r, err := Open(c.dir)
			require.NoError(t, err)
			c1 := commitJournaled(t, r, files(3, "c1-"), "c1\n")
			require.NoError(t, r.Flush()) // c1's pack alone, as the test damages it
			c2 := commitJournaled(t, r, files(3, "c2-"), "c2\n")
			recs, err := readRecords(r.journal.Load())
			require.NoError(t, err)
			require.Len(t, recs, 2)
			abandon(t, r)

			// c2's Commit died in its fdatasync: nothing after the record
			// happened, and the record is partial.
			require.NoError(t, os.WriteFile(c.refFile(), []byte(c1.String()+"\n"), 0o644))
			pack := packPath(filepath.Join(c.dir, "objects/pack"), recs[1].pack.sum, "")
			require.NoFileExists(t, pack+".pack", "held, never flushed")
			require.NoFileExists(t, pack+".idx")
			require.NoError(t, os.Remove(packPath(filepath.Join(c.dir, "objects/pack"), recs[0].pack.sum, ".pack")))
			f, err := os.OpenFile(journalPath(c.dir), os.O_RDWR, 0)
			require.NoError(t, err)
			off := int64(journalDataStart + recordHeaderLen + recs[0].payloadLen())
			rec := make([]byte, recordHeaderLen+recs[1].payloadLen())
			_, err = f.ReadAt(rec, off)
			require.NoError(t, err)
			tear(rec)
			_, err = f.WriteAt(rec, off)
			require.NoError(t, err)
			require.NoError(t, f.Close())

			r, err = Open(c.dir)
			require.NoError(t, err)
			defer r.Close()
			got, err := r.Ref(plumbing.Main)
			require.NoError(t, err)
			require.Equal(t, c1, got)
			require.Contains(t, readFile(t, r, c1, "c1-0002.json"), `"n": 2`, "c1's pack restored")
			require.ErrorIs(t, r.Storer().HasEncodedObject(c2), plumbing.ErrObjectNotFound)
			fsck(t, c.dir)
		})
	}
}

// A ref moved by someone else (git push) after our last record holds a
// value the journal never mentions: recovery leaves it, and restores our
// objects all the same.
func TestRecoverLeavesRefsMovedByOthers(t *testing.T) {
	c := crashAfterCommit(t)
	r, err := Open(c.dir)
	require.NoError(t, err)
	c1 := commitJournaled(t, r, files(3, "ours-"), "ours\n")
	recs, err := readRecords(r.journal.Load())
	require.NoError(t, err)
	b := r.NewBatch()
	theirs := addCommit(t, b, c1, files(3, "theirs-"), "theirs\n")
	require.NoError(t, r.Write(b))
	require.NoError(t, r.Flush()) // ours on disk, for git to move on from
	abandon(t, r)
	git(t, c.dir, "update-ref", "refs/heads/main", theirs.String(), c1.String())
	require.NoError(t, os.Remove(packPath(filepath.Join(c.dir, "objects/pack"), recs[0].pack.sum, ".pack")))

	r, err = Open(c.dir)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, theirs, got)
	require.Contains(t, readFile(t, r, c1, "ours-0002.json"), `"n": 2`)
	fsck(t, c.dir)
}

// With several records for a ref, any value it held on the way (or before)
// means the later moves were lost: it ends at the last one.
func TestRecoverReplaysRecordsInOrder(t *testing.T) {
	for _, back := range []int{0, 1, 2} {
		c := crashAfterCommit(t)
		r, err := Open(c.dir)
		require.NoError(t, err)
		hs := []plumbing.Hash{c.c1}
		for i := range 3 {
			hs = append(hs, commitJournaled(t, r, files(2, string(rune('a'+i))), "m\n"))
		}
		abandon(t, r)
		require.NoError(t, os.WriteFile(c.refFile(), []byte(hs[back].String()+"\n"), 0o644))
		r, err = Open(c.dir)
		require.NoError(t, err)
		got, err := r.Ref(plumbing.Main)
		require.NoError(t, err)
		require.Equal(t, hs[3], got, "from %d", back)
		require.NoError(t, r.Close())
	}
}

// A tiny journal fills up every few Commits: each time a checkpoint starts
// a new epoch from the beginning of the file, over older records that
// replay must not take for current ones.
func TestJournalWrapsAround(t *testing.T) {
	r := openTemp(t)
	r.journalMax = journalDataStart + 4<<10
	var last, prev plumbing.Hash
	for i := range 40 {
		prev, last = last, commitJournaled(t, r, files(3, string(rune('a'+i%26))+"-"), "m\n")
		require.NoError(t, r.Flush()) // a pack each, as the test damages the last
	}
	gen, seq := epoch(t, r)
	require.Greater(t, gen, uint64(5), "wrapped around")
	require.Positive(t, seq)
	recs, err := readRecords(r.journal.Load())
	require.NoError(t, err)
	require.Len(t, recs, int(seq), "replay stops at the end of the epoch")
	require.Equal(t, last, recs[len(recs)-1].new)
	dir := r.Dir()
	abandon(t, r)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "refs/heads/main"), []byte(prev.String()+"\n"), 0o644))
	require.NoError(t, os.Remove(packPath(filepath.Join(dir, "objects/pack"), recs[len(recs)-1].pack.sum, ".pack")))
	r, err = Open(dir)
	require.NoError(t, err)
	defer r.Close()
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, last, got)
	require.Equal(t, "40", git(t, dir, "rev-list", "--count", "main"))
	fsck(t, dir)
}

// A checkpoint torn while writing its header (into the slot of the older
// generation) leaves the current one, whose records still replay.
func TestRecoverFromTornHeader(t *testing.T) {
	c := crashAfterCommit(t)
	r := c.reopen(t) // recovery checkpointed: generation 2
	c2 := commitJournaled(t, r, files(2, "x"), "m\n")
	recs, err := readRecords(r.journal.Load())
	require.NoError(t, err)
	gen, _ := epoch(t, r)
	require.NoError(t, r.Flush()) // c2's files there, for the test to damage
	abandon(t, r)
	f, err := os.OpenFile(journalPath(c.dir), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("HVNJ torn"), int64((gen+1)%2)*journalSlotLen)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Truncate(c.refFile(), 0))
	require.NoError(t, os.Remove(packPath(filepath.Join(c.dir, "objects/pack"), recs[0].pack.sum, ".pack")))

	r, err = Open(c.dir)
	require.NoError(t, err)
	got, err := r.Ref(plumbing.Main)
	require.NoError(t, err)
	require.Equal(t, c2, got)
	require.Contains(t, readFile(t, r, c2, "x0001.json"), `"n": 1`)

	// Both slots unreadable: refuse to guess.
	abandon(t, r)
	f, err = os.OpenFile(journalPath(c.dir), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 2*journalSlotLen), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = Open(c.dir)
	require.ErrorIs(t, err, ErrCorruptJournal)
}
