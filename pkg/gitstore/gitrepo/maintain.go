package gitrepo

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

const (
	// maxPacks is how many packs Maintain lets accumulate before merging.
	// Every pack costs readers an index lookup per object they miss.
	maxPacks = 16
	// packFactor: Maintain leaves packs alone that form a geometric
	// progression of this factor (git repack --geometric), so each byte
	// is copied O(log total) times over the repository's life, not once
	// per Maintain.
	packFactor = 2
)

// Maintain merges small packs into one once there are more than maxPacks:
// the smallest packs, and larger ones up to where sizes at least double,
// as git repack --geometric=2 picks them. Kept, promisor and cruft packs
// are left alone (see mergeable). Entries are copied compressed as they
// are (deltas too, with their distance to the base rewritten), duplicates
// dropped. The merged pack is durable and visible to readers before the
// merged ones are closed and removed, and a reader that was reading a
// removed pack retries, so no read fails because of Maintain. With
// maxPacks or fewer packs it costs a directory listing. Write and Commit
// may run meanwhile; each byte written is copied about five times over
// the repository's life (README.md).
//
// It checkpoints the journal after a merge, and when its oldest record is
// older than checkpointAge (see checkpointIfDue).
func (r *Repo) Maintain() error {
	r.maintainMu.Lock()
	defer r.maintainMu.Unlock()
	merged, err := r.mergeSmallPacks()
	if err != nil {
		return err
	}
	return r.checkpointIfDue(merged)
}

// mergeSmallPacks merges packs if there are too many, and reports whether
// it did.
func (r *Repo) mergeSmallPacks() (bool, error) {
	if _, err := r.refreshPacks(nil); err != nil {
		return false, err
	}
	set := r.packs.Load()
	if set == nil || len(set.packs) <= r.maxPacks {
		return false, nil
	}
	var cands []*pack
	for _, p := range set.packs {
		if r.mergeable(p) {
			cands = append(cands, p)
		}
	}
	if len(cands) <= r.maxPacks {
		return false, nil
	}
	roll := geometricRollup(cands)
	if len(roll) < 2 {
		return false, nil
	}
	merged, err := r.mergePacks(roll)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil // git gc removed a pack meanwhile; look again next time
	}
	if err != nil {
		return false, err
	}
	if err := r.replacePacks(merged, roll); err != nil {
		return false, err
	}
	return true, r.removePacks(roll, merged.sum)
}

// mergeable: not kept (.keep: a push in progress, or kept on purpose), not
// a promisor pack, not a cruft pack (.mtimes: git gc's unreachable objects
// with their ages), whose meaning a merge would lose.
func (r *Repo) mergeable(p *pack) bool {
	if p.held != nil {
		return false // not on disk yet
	}
	for _, ext := range []string{".keep", ".promisor", ".mtimes"} {
		if _, err := os.Stat(packPath(r.packDir, p.sum, ext)); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// geometricRollup returns the packs to merge: sorted by size, the
// smallest ones below the point from where each pack is at least
// packFactor times the previous, plus the larger ones the merged pack
// would then outgrow less than packFactor times.
func geometricRollup(packs []*pack) []*pack {
	s := slices.Clone(packs)
	slices.SortFunc(s, func(a, b *pack) int { return cmp.Compare(a.size, b.size) })
	split := 0
	for i := len(s) - 1; i > 0; i-- {
		if s[i].size < packFactor*s[i-1].size {
			split = i + 1
			break
		}
	}
	total := int64(0)
	for _, p := range s[:split] {
		total += p.size
	}
	for split < len(s) && s[split].size < packFactor*total {
		total += s[split].size
		split++
	}
	return s[:split]
}

// mergePacks writes one pack holding every object of packs. It reads
// them through files of its own: a reader that finds a pack gone from disk
// closes the snapshot's file.
func (r *Repo) mergePacks(packs []*pack) (*pack, error) {
	var own []*pack
	defer func() {
		for _, p := range own {
			p.f.Close()
		}
	}()
	for _, p := range packs {
		f, err := os.Open(packPath(r.packDir, p.sum, ".pack"))
		if err != nil {
			return nil, err
		}
		own = append(own, &pack{sum: p.sum, idx: p.idx, f: f, size: p.size})
	}
	packs = own
	at := unplaced(packs)
	pf, err := createPackFile(r.packDir, len(at))
	if err != nil {
		return nil, err
	}
	for _, p := range packs {
		if err := copyEntries(pf.packWriter, p, at, recompress); err != nil {
			pf.abort()
			return nil, fmt.Errorf("merging pack-%s: %w", p.sum, err)
		}
	}
	return pf.finish()
}

// unplaced maps every object of packs to -1: its offset in a merged pack,
// which copyEntries sets. Its length is the merged pack's object count.
func unplaced(packs []*pack) map[plumbing.Hash]int64 {
	at := map[plumbing.Hash]int64{}
	for _, p := range packs {
		for i := range p.idx.n {
			at[p.idx.hash(i)] = -1
		}
	}
	return at
}

// copyEntries appends p's objects not yet written to pw, in p's order so
// that OFS_DELTA bases come before their deltas, rewriting the distance
// to the base; with a non-nil convert, each entry goes through it first.
func copyEntries(pw *packWriter, p *pack, at map[plumbing.Hash]int64, convert func([]byte) ([]byte, error)) error {
	moved := make(map[int64]int64, p.idx.n) // offset in p → in pw
	for _, pos := range p.idx.byOffset {
		h, off := p.idx.hash(int(pos)), p.idx.offset(int(pos))
		if o := at[h]; o >= 0 {
			moved[off] = o // a duplicate: deltas use the first copy
			continue
		}
		raw, err := p.raw(off)
		if err != nil {
			return err
		}
		if crc32.ChecksumIEEE(raw) != p.idx.crc(int(pos)) {
			return fmt.Errorf("%w: crc mismatch for %s", errBadPack, h)
		}
		if convert != nil {
			if raw, err = convert(raw); err != nil {
				return fmt.Errorf("%s: %w", h, err)
			}
		}
		if raw, err = rebase(raw, off, pw.off, moved); err != nil {
			return err
		}
		moved[off], at[h] = pw.off, pw.off
		if err := pw.add(h, raw); err != nil {
			return err
		}
	}
	return nil
}

// recompress returns an entry whose zlib stream is stored (deflate stores
// small objects in the commit's path) compressed, when that is smaller;
// other entries as they are. Maintain's merges do it, off that path.
func recompress(raw []byte) ([]byte, error) {
	t, size, n, err := parseEntryHeader(raw)
	if err != nil {
		return nil, err
	}
	switch t {
	case plumbing.OFSDeltaObject:
		_, m, err := parseOfsDelta(raw[n:])
		if err != nil {
			return nil, err
		}
		n += m
	case plumbing.REFDeltaObject:
		n += hashLen
	}
	if n > len(raw) || !isStored(raw[n:]) {
		return raw, nil
	}
	content, err := inflate(raw[n:], size)
	if err != nil {
		return nil, err
	}
	z := deflater.appendDeflated(nil, content)
	if len(z) >= len(raw)-n {
		return raw, nil
	}
	return append(raw[:n:n], z...), nil
}

// rebase rewrites an OFS_DELTA entry moving from off to newOff; other
// entries are position independent.
func rebase(raw []byte, off, newOff int64, moved map[int64]int64) ([]byte, error) {
	t, _, n, err := parseEntryHeader(raw)
	if err != nil || t != plumbing.OFSDeltaObject {
		return raw, err
	}
	dist, m, err := parseOfsDelta(raw[n:])
	if err != nil {
		return nil, err
	}
	base, ok := moved[off-dist]
	if !ok {
		return nil, fmt.Errorf("%w: delta at %d has no base at %d", errBadPack, off, off-dist)
	}
	out := bytes.Clone(raw[:n])
	out = appendOfsDelta(out, newOff-base)
	return append(out, raw[n+m:]...), nil
}

// removePacks deletes merged packs: the pack first, as git does, so that
// no reader finds an index whose pack is about to go (readers find packs
// by their index and skip one without its pack; an index left by a crash
// is removed by Open, and by git gc), then the files git may have added
// beside it. Like git repack, it drops a multi-pack-index, which would
// name them.
func (r *Repo) removePacks(packs []*pack, keep plumbing.Hash) error {
	for _, p := range packs {
		if p.sum == keep {
			continue
		}
		for _, ext := range []string{".pack", ".idx", ".bitmap", ".rev"} {
			if err := os.Remove(packPath(r.packDir, p.sum, ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if err := removeMatching(r.packDir, func(n string) bool { return strings.HasPrefix(n, "multi-pack-index") }); err != nil {
		return err
	}
	return syncDir(r.packDir)
}
