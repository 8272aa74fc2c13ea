package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/require"
)

func TestGeometricRollup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int64
		want  []int64
	}{
		{"equal sizes all merge", []int64{10, 10, 10, 10}, []int64{10, 10, 10, 10}},
		{"progression left alone", []int64{1, 2, 4, 8, 16}, nil},
		{"small ones merge under a big one", []int64{1000, 10, 12, 11}, []int64{10, 11, 12}},
		{"merged pack absorbs what it outgrows", []int64{10, 10, 10, 50, 1000}, []int64{10, 10, 10, 50}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var packs []*pack
			for _, s := range tc.sizes {
				packs = append(packs, &pack{size: s})
			}
			var got []int64
			for _, p := range geometricRollup(packs) {
				got = append(got, p.size)
			}
			require.Equal(t, tc.want, got)
		})
	}
}

func TestMaintainMergesSmallPacks(t *testing.T) {
	r := openTemp(t)
	var commits []plumbing.Hash
	for i := range maxPacks + 4 {
		commits = append(commits, commitFiles(t, r, files(20, fmt.Sprintf("c%d-", i)), "m\n"))
	}
	require.Equal(t, maxPacks+4, packCount(t, r))
	require.NoError(t, r.Maintain())
	require.Equal(t, 1, packCount(t, r))
	require.NoError(t, r.Maintain(), "nothing to do")
	require.Equal(t, 1, packCount(t, r))

	for i, h := range commits {
		require.Contains(t, readFile(t, r, h, fmt.Sprintf("c%d-0019.json", i)), `"n": 19`)
	}
	fsck(t, r.Dir())
	require.Equal(t, fmt.Sprint(len(commits)), git(t, r.Dir(), "rev-list", "--count", "main"))
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	idx, err := os.ReadFile(packPath(r.packDir, sums[0], ".idx"))
	require.NoError(t, err)
	theirs := filepath.Join(t.TempDir(), "git.idx")
	git(t, r.Dir(), "index-pack", "-o", theirs, packPath(r.packDir, sums[0], ".pack"))
	want, err := os.ReadFile(theirs)
	require.NoError(t, err)
	require.Equal(t, want, idx, "git derives the same index from the merged pack")
}

// Packs git received hold OFS and REF deltas; merging rewrites the
// former's distances.
func TestMaintainMergesGitsDeltifiedPacks(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 2
	git(t, r.Dir(), "config", "receive.unpackLimit", "1")
	commitFiles(t, r, map[string]string{"a": "1"}, "ours\n")
	work := filepath.Join(t.TempDir(), "work")
	var tips []plumbing.Hash
	for range 4 {
		tips = append(tips, pushCommits(t, r, work, 3))
	}
	_, err := r.refreshPacks(r.packs.Load())
	require.NoError(t, err)
	deltas := map[plumbing.ObjectType]int{}
	for _, p := range r.packs.Load().packs {
		for _, pos := range p.idx.byOffset {
			raw, err := p.raw(p.idx.offset(int(pos)))
			require.NoError(t, err)
			typ, _, _, err := parseEntryHeader(raw)
			require.NoError(t, err)
			deltas[typ]++
		}
	}
	require.Positive(t, deltas[plumbing.OFSDeltaObject], "precondition: git sent deltas: %v", deltas)
	before := packCount(t, r)
	require.Greater(t, before, 2)

	require.NoError(t, r.Maintain())
	require.Less(t, packCount(t, r), before)
	fsck(t, r.Dir())
	require.NoError(t, r.Close())
	r, err = Open(r.Dir())
	require.NoError(t, err)
	defer r.Close()
	for _, tip := range tips {
		require.Contains(t, readFile(t, r, tip, "big.txt"), "line 1999")
	}
	git(t, r.Dir(), "clone", "-q", r.Dir(), filepath.Join(t.TempDir(), "clone"))
}

func TestMaintainLeavesKeptPacks(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 2
	for i := range 4 {
		commitFiles(t, r, files(5, fmt.Sprintf("c%d-", i)), "m\n")
	}
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	for _, s := range sums[:2] {
		require.NoError(t, os.WriteFile(packPath(r.packDir, s, ".keep"), nil, 0o644))
	}
	require.NoError(t, r.Maintain(), "only two candidates: no merge")
	require.Equal(t, 4, packCount(t, r))

	commitFiles(t, r, files(5, "more-"), "m\n")
	require.NoError(t, r.Maintain())
	after, err := listPacks(r.packDir)
	require.NoError(t, err)
	require.Len(t, after, 3)
	for _, s := range sums[:2] {
		require.True(t, slices.Contains(after, s), "kept pack %s stays", s)
	}
	fsck(t, r.Dir())
}

// After git gc (a bitmap) and git multi-pack-index, Maintain still leaves
// a repository git reads: it drops the index of packs it removed.
func TestMaintainAlongsideGitMaintenance(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 2
	for i := range 3 {
		commitFiles(t, r, files(5, fmt.Sprintf("a%d-", i)), "m\n")
	}
	git(t, r.Dir(), "gc", "-q")
	git(t, r.Dir(), "multi-pack-index", "write")
	var last plumbing.Hash
	for i := range 4 {
		last = commitFiles(t, r, files(5, fmt.Sprintf("b%d-", i)), "m\n")
	}
	git(t, r.Dir(), "multi-pack-index", "write")
	require.NoError(t, r.Maintain())
	_, err := os.Stat(filepath.Join(r.packDir, "multi-pack-index"))
	require.True(t, os.IsNotExist(err))
	fsck(t, r.Dir())
	require.Equal(t, "7", git(t, r.Dir(), "rev-list", "--count", last.String()))
	ents, err := os.ReadDir(r.packDir)
	require.NoError(t, err)
	for _, e := range ents {
		sum, ok := packName(e.Name(), filepath.Ext(e.Name()))
		if ok {
			_, err := os.Stat(packPath(r.packDir, sum, ".pack"))
			require.NoError(t, err, "%s has its pack", e.Name())
		}
	}
}

// The commit's path stores small objects (deflate); a merge compresses
// those that compression shrinks.
func TestMaintainCompressesStoredEntries(t *testing.T) {
	r := openTemp(t)
	big := strings.Repeat(`{"kind": "ConfigMap", "data": {"key": "value"}}`+"\n", 40)
	var commits []plumbing.Hash
	for i := range maxPacks + 4 {
		fs := files(3, fmt.Sprintf("c%d-", i))
		fs[fmt.Sprintf("big%d.json", i)] = big + fmt.Sprint(i)
		commits = append(commits, commitFiles(t, r, fs, "m\n"))
	}
	blob := hashObject(plumbing.BlobObject, []byte(big+"0"))
	before := entryStream(t, r, blob)
	require.True(t, isStored(before), "written stored")
	require.NoError(t, r.Maintain())
	require.Equal(t, 1, packCount(t, r))
	after := entryStream(t, r, blob)
	require.False(t, isStored(after), "compressed by the merge")
	require.Less(t, len(after), len(before)/4)
	for i, h := range commits {
		require.Equal(t, big+fmt.Sprint(i), readFile(t, r, h, fmt.Sprintf("big%d.json", i)))
	}
	fsck(t, r.Dir())
}

// entryStream returns the zlib stream of h's pack entry.
func entryStream(t *testing.T, r *Repo, h plumbing.Hash) []byte {
	t.Helper()
	p, off, ok := r.packs.Load().find(h)
	require.True(t, ok, "%s in a pack", h)
	raw, err := p.raw(off)
	require.NoError(t, err)
	_, _, n, err := parseEntryHeader(raw)
	require.NoError(t, err)
	return raw[n:]
}

func TestRecompress(t *testing.T) {
	text := []byte(strings.Repeat("server.port=8080\nlog.level=info\n", 30))
	random := make([]byte, 600)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	entry := func(t plumbing.ObjectType, data, z []byte) []byte {
		raw := appendEntryHeader(nil, t, int64(len(data)))
		if t == plumbing.OFSDeltaObject {
			raw = appendOfsDelta(raw, 1234)
		}
		return append(raw, z...)
	}
	stored := func(b []byte) []byte { return storingDeflater.appendDeflated(nil, b) }
	compressed := func(b []byte) []byte { return deflater.appendDeflated(nil, b) }
	for _, tc := range []struct {
		name      string
		raw       []byte
		data      []byte
		unchanged bool
	}{
		{"stored blob compresses", entry(plumbing.BlobObject, text, stored(text)), text, false},
		{"stored delta compresses, its base distance kept", entry(plumbing.OFSDeltaObject, text, stored(text)), text, false},
		{"compressed blob is left", entry(plumbing.BlobObject, text, compressed(text)), text, true},
		{"incompressible stored blob is left", entry(plumbing.BlobObject, random, stored(random)), random, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := recompress(tc.raw)
			require.NoError(t, err)
			if tc.unchanged {
				require.Equal(t, tc.raw, got)
				return
			}
			require.Less(t, len(got), len(tc.raw))
			typ, size, n, err := parseEntryHeader(got)
			require.NoError(t, err)
			require.Equal(t, int64(len(tc.data)), size)
			if typ == plumbing.OFSDeltaObject {
				dist, m, err := parseOfsDelta(got[n:])
				require.NoError(t, err)
				require.Equal(t, int64(1234), dist)
				n += m
			}
			require.False(t, isStored(got[n:]))
			content, err := inflate(got[n:], size)
			require.NoError(t, err)
			require.Equal(t, tc.data, content)
		})
	}
	_, err := recompress([]byte{0x80})
	require.Error(t, err, "a truncated header")
}
