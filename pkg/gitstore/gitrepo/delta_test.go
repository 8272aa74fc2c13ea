package gitrepo

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/stretchr/testify/require"
)

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
	return b
}

func TestAppendDeltaRebuildsTarget(t *testing.T) {
	big := pattern(200_000, 1) // copies longer than one instruction
	huge := pattern(1<<25, 2)  // offsets needing four bytes
	for name, tc := range map[string]struct{ base, target []byte }{
		"middle changed":  {[]byte("prefix-AAAA-suffix"), []byte("prefix-BBBBBB-suffix")},
		"prefix changed":  {[]byte("xx-same"), []byte("yyyy-same")},
		"suffix changed":  {[]byte("same-xx"), []byte("same-yyyy")},
		"entry removed":   {[]byte("one,two,three"), []byte("one,three")},
		"all different":   {[]byte("aaaa"), []byte("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")},
		"long copies":     {big, append(append(bytes.Clone(big[:150_000]), "new"...), big[150_000:]...)},
		"far copy offset": {huge, append(bytes.Clone(huge[:len(huge)-10]), "tail"...)},
	} {
		t.Run(name, func(t *testing.T) {
			p, s := commonAffixes(tc.base, tc.target)
			d := appendDelta(nil, tc.base, tc.target, p, s)
			got, err := packfile.PatchDelta(tc.base, d)
			require.NoError(t, err)
			require.True(t, bytes.Equal(tc.target, got))
			require.LessOrEqual(t, len(d), deltaSize(tc.target, p, s))
		})
	}
}

func TestCommonAffixes(t *testing.T) {
	a := pattern(5000, 3)
	b := bytes.Clone(a)
	b[1234] ^= 0xff
	p, s := commonAffixes(a, b)
	require.Equal(t, 1234, p)
	require.Equal(t, 5000-1235, s)
	p, s = commonAffixes([]byte("abab"), []byte("ab"))
	require.Equal(t, 2, p)
	require.Equal(t, 0, s, "prefix and suffix do not overlap")
}

func TestPlanDeltas(t *testing.T) {
	v1 := pattern(4000, 5)
	v2 := bytes.Clone(v1)
	v2[100] ^= 1
	v3 := bytes.Clone(v2)
	v3[3000] ^= 1
	other := pattern(4000, 99)
	objs := []batchObject{
		{t: plumbing.TreeObject, data: v1},
		{t: plumbing.BlobObject, data: v2}, // same bytes, other type: never a base for a tree
		{t: plumbing.TreeObject, data: other},
		{t: plumbing.TreeObject, data: v2},
		{t: plumbing.TreeObject, data: v3},
		{t: plumbing.TreeObject, data: []byte("small")},
	}
	var bases []int
	for _, p := range planDeltas(objs) {
		bases = append(bases, p.base)
	}
	require.Equal(t, []int{-1, -1, -1, 0, 3, -1}, bases)

	chain := make([]batchObject, maxChain+3)
	for i := range chain {
		d := bytes.Clone(v1)
		d[i] ^= 0xff
		chain[i] = batchObject{t: plumbing.TreeObject, data: d}
	}
	depth := map[int]int{}
	for i, p := range planDeltas(chain) {
		if p.base >= 0 {
			depth[i] = depth[p.base] + 1
		}
		require.LessOrEqual(t, depth[i], maxChain)
	}
}

// A batch of commits rewriting one entry of a big directory is written as
// deltas git reads, and the pack is several times smaller.
func TestBatchOfBigTreesIsDeltified(t *testing.T) {
	r := openTemp(t)
	r.maxPacks = 2
	seed := &batchSink{tb: t, b: r.NewBatch()}
	cms := newConfigMaps(seed)
	head := cms.commits(seed, plumbing.ZeroHash, 1)
	require.NoError(t, r.Write(seed.b))
	require.NoError(t, r.CompareAndSwapRef(plumbing.Main, head, plumbing.ZeroHash))
	var all []plumbing.Hash
	for range 4 {
		s := &batchSink{tb: t, b: r.NewBatch()}
		next := cms.commits(s, head, benchCommits)
		for _, o := range s.b.objs {
			all = append(all, o.h)
		}
		require.NoError(t, r.Write(s.b))
		require.NoError(t, r.CompareAndSwapRef(plumbing.Main, next, head))
		head = next
	}
	sums, err := listPacks(r.packDir)
	require.NoError(t, err)
	verify := git(t, r.Dir(), "verify-pack", "-v", packPath(r.packDir, sums[len(sums)-1], ".idx"))
	require.Contains(t, verify, "chain length = 15: 1 object")
	fi, err := os.Stat(packPath(r.packDir, sums[len(sums)-1], ".pack"))
	require.NoError(t, err)
	require.Less(t, fi.Size(), int64(60_000), "one full 1,000-entry tree, deltas for the rest")

	theirs := filepath.Join(t.TempDir(), "git.idx")
	git(t, r.Dir(), "index-pack", "-o", theirs, packPath(r.packDir, sums[len(sums)-1], ".pack"))
	want, err := os.ReadFile(theirs)
	require.NoError(t, err)
	got, err := os.ReadFile(packPath(r.packDir, sums[len(sums)-1], ".idx"))
	require.NoError(t, err)
	require.Equal(t, want, got)

	require.NoError(t, r.Maintain(), "merges packs of deltas")
	require.Less(t, packCount(t, r), len(sums))
	fsck(t, r.Dir())
	require.NoError(t, r.Close())
	r, err = Open(r.Dir())
	require.NoError(t, err)
	defer r.Close()
	for _, h := range all { // every object reads back as itself
		o, err := r.Storer().EncodedObject(plumbing.AnyObject, h)
		require.NoError(t, err)
		rd, _ := o.Reader()
		data, _ := io.ReadAll(rd)
		require.Equal(t, h, plumbing.ComputeHash(o.Type(), data))
	}
	require.Equal(t, "65", git(t, r.Dir(), "rev-list", "--count", "main"))
	require.True(t, strings.HasPrefix(git(t, r.Dir(), "cat-file", "-p", "main:core/configmaps/default/cm-00064.json"), "{"))
}
