package gitrepo

import (
	stdzlib "compress/zlib"
	"crypto"
	"crypto/sha1"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/hash"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/klauspost/compress/zlib"
	"github.com/pjbgf/sha1cd"
)

// The store's write pattern: each write changes one ConfigMap in
// core/configmaps/default/<name>.json among 1,000 siblings, so it adds a
// blob, four trees and a commit; a batch is 16 such commits and one ref
// update.
const (
	benchSiblings = 1000
	benchCommits  = 16
)

// sink receives objects: a Batch, or go-git's filesystem storage.
type sink interface {
	blob(data []byte) plumbing.Hash
	tree(entries []object.TreeEntry) plumbing.Hash
	commit(c *object.Commit) plumbing.Hash
}

type configMaps struct {
	leaf []object.TreeEntry
	seq  int
}

func configMapJSON(name string, v int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default",`+
		`"uid":"6f1c2b1e-8d3a-4c55-9a43-%012d","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z",`+
		`"labels":{"app":"web","tier":"frontend"}},"data":{"config.yaml":"listen: 8080\nlog: info\nworkers: 4\n",`+
		`"version":"%d","feature-flags":"a=true,b=false,c=true","owner":"team-a@example.com",`+
		`"description":"a configuration map of a typical size for benchmarks of the heaven git store"}}`, name, v, v, v)
}

func newConfigMaps(s sink) *configMaps {
	c := &configMaps{}
	for i := range benchSiblings {
		name := fmt.Sprintf("cm-%05d.json", i)
		c.leaf = append(c.leaf, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: s.blob(configMapJSON(name, 0))})
	}
	return c
}

// change rewrites one ConfigMap and returns the new root tree.
func (c *configMaps) change(s sink) plumbing.Hash {
	c.seq++
	e := &c.leaf[c.seq%len(c.leaf)]
	e.Hash = s.blob(configMapJSON(e.Name, c.seq))
	h := s.tree(c.leaf)
	for _, dir := range []string{"default", "configmaps", "core"} {
		h = s.tree([]object.TreeEntry{{Name: dir, Mode: filemode.Dir, Hash: h}})
	}
	return h
}

// commits adds n commits, each changing one ConfigMap, and returns the last.
func (c *configMaps) commits(s sink, parent plumbing.Hash, n int) plumbing.Hash {
	for range n {
		cm := &object.Commit{Author: testSig, Committer: testSig, Message: "update\n", TreeHash: c.change(s)}
		if !parent.IsZero() {
			cm.ParentHashes = []plumbing.Hash{parent}
		}
		parent = s.commit(cm)
	}
	return parent
}

type batchSink struct {
	tb  testing.TB
	b   *Batch
	buf []byte
}

func (s *batchSink) blob(data []byte) plumbing.Hash { return s.b.AddBlob(data) }
func (s *batchSink) tree(es []object.TreeEntry) plumbing.Hash {
	data, err := AppendTree(nil, es) // the batch keeps it: a new slice
	if err != nil {
		s.tb.Fatal(err)
	}
	return s.b.Add(plumbing.TreeObject, data)
}
func (s *batchSink) commit(c *object.Commit) plumbing.Hash {
	h, err := s.b.AddCommit(c)
	if err != nil {
		s.tb.Fatal(err)
	}
	return h
}

type goGitSink struct {
	tb testing.TB
	s  *filesystem.Storage
}

func (s *goGitSink) set(encode func(plumbing.EncodedObject) error) plumbing.Hash {
	o := s.s.NewEncodedObject()
	if err := encode(o); err != nil {
		s.tb.Fatal(err)
	}
	h, err := s.s.SetEncodedObject(o)
	if err != nil {
		s.tb.Fatal(err)
	}
	return h
}
func (s *goGitSink) blob(data []byte) plumbing.Hash {
	return s.set(func(o plumbing.EncodedObject) error {
		o.SetType(plumbing.BlobObject)
		w, _ := o.Writer()
		_, err := w.Write(data)
		return err
	})
}
func (s *goGitSink) tree(es []object.TreeEntry) plumbing.Hash {
	return s.set((&object.Tree{Entries: es}).Encode)
}
func (s *goGitSink) commit(c *object.Commit) plumbing.Hash { return s.set(c.Encode) }

func reportWrites(b *testing.B, start time.Time) {
	b.ReportMetric(float64(b.N*benchCommits)/time.Since(start).Seconds(), "writes/s")
}

// BenchmarkWrite: one op is one batch of 16 commits made durable, the ref
// moved, and Maintain called: with Write and CompareAndSwapRef, or with
// Commit (one fdatasync). See README.md for results.
func BenchmarkWrite(b *testing.B) {
	b.Run("gitrepo", func(b *testing.B) { benchGitrepo(b, false) })
	b.Run("gitrepo-commit", func(b *testing.B) { benchGitrepo(b, true) })
	// What registering crypto/sha1 (no collision detection) in go-git
	// would save; the process-wide default stays sha1cd.
	b.Run("gitrepo-crypto-sha1", func(b *testing.B) {
		if err := hash.RegisterHash(crypto.SHA1, sha1.New); err != nil {
			b.Fatal(err)
		}
		defer hash.RegisterHash(crypto.SHA1, sha1cd.New)
		benchGitrepo(b, false)
	})
	b.Run("gitrepo-build-only", func(b *testing.B) { // the CPU part: encode and hash
		r := openTemp(b)
		cms := newConfigMaps(&batchSink{tb: b, b: r.NewBatch()})
		start := time.Now()
		for b.Loop() {
			cms.commits(&batchSink{tb: b, b: r.NewBatch()}, plumbing.ZeroHash, benchCommits)
		}
		reportWrites(b, start)
	})
	b.Run("go-git-no-fsync", func(b *testing.B) {
		st := filesystem.NewStorage(osfs.New(filepath.Join(b.TempDir(), "repo.git")), cache.NewObjectLRUDefault())
		if err := st.Init(); err != nil {
			b.Fatal(err)
		}
		s := &goGitSink{tb: b, s: st}
		cms := newConfigMaps(s)
		head := cms.commits(s, plumbing.ZeroHash, 1)
		start := time.Now()
		for b.Loop() {
			head = cms.commits(s, head, benchCommits)
			if err := st.SetReference(plumbing.NewHashReference(plumbing.Main, head)); err != nil {
				b.Fatal(err)
			}
		}
		reportWrites(b, start)
	})
}

// benchGitrepo measures batches made durable with Write then
// CompareAndSwapRef, or with Commit (journaled: its time is in write-ms).
func benchGitrepo(b *testing.B, journaled bool) {
	r := openTemp(b)
	seed := &batchSink{tb: b, b: r.NewBatch()}
	cms := newConfigMaps(seed)
	head := cms.commits(seed, plumbing.ZeroHash, 1)
	if err := r.Write(seed.b); err != nil {
		b.Fatal(err)
	}
	if err := r.CompareAndSwapRef(plumbing.Main, head, plumbing.ZeroHash); err != nil {
		b.Fatal(err)
	}
	var build, write, ref, maintain time.Duration
	lap := func(d *time.Duration, t0 time.Time) time.Time { now := time.Now(); *d += now.Sub(t0); return now }
	start := time.Now()
	for b.Loop() {
		t := time.Now()
		s := &batchSink{tb: b, b: r.NewBatch()}
		next := cms.commits(s, head, benchCommits)
		t = lap(&build, t)
		if journaled {
			if err := r.Commit(s.b, plumbing.Main, next, head); err != nil {
				b.Fatal(err)
			}
			t = lap(&write, t)
		} else {
			if err := r.Write(s.b); err != nil {
				b.Fatal(err)
			}
			t = lap(&write, t)
			if err := r.CompareAndSwapRef(plumbing.Main, next, head); err != nil {
				b.Fatal(err)
			}
			t = lap(&ref, t)
		}
		head = next
		if err := r.Maintain(); err != nil { // as the store would, after each batch
			b.Fatal(err)
		}
		lap(&maintain, t)
	}
	reportWrites(b, start)
	for _, m := range []struct {
		d    time.Duration
		unit string
	}{{build, "build-ms/op"}, {write, "write-ms/op"}, {ref, "ref-ms/op"}, {maintain, "maintain-ms/op"}} {
		b.ReportMetric(float64(m.d.Microseconds())/1000/float64(b.N), m.unit)
	}
}

// BenchmarkCompress: zlib levels on a 1,000-entry tree, the bulk of a
// batch's bytes, and on a ConfigMap, the typical blob; the standard
// library's against klauspost/compress's (which deflater uses).
func BenchmarkCompress(b *testing.B) {
	tree, _ := AppendTree(nil, siblings(benchSiblings))
	blob := fmt.Appendf(nil, `{"apiVersion":"v1","data":{"key":"value-%040d"},"kind":"ConfigMap","metadata":{"creationTimestamp":"2026-11-27T04:40:43Z","name":"cm-0042","namespace":"default","resourceVersion":"12345","uid":"4f1c2a3b-1111-2222-3333-444455556666"}}`, 42)
	type zwriter interface {
		io.WriteCloser
		Reset(io.Writer)
	}
	libs := map[string]func(level int) zwriter{
		"std":       func(level int) zwriter { w, _ := stdzlib.NewWriterLevel(nil, level); return w },
		"klauspost": func(level int) zwriter { w, _ := zlib.NewWriterLevel(nil, level); return w },
	}
	for _, data := range []struct {
		name string
		b    []byte
	}{{"tree", tree}, {"configmap", blob}} {
		for lib, newWriter := range libs {
			for _, level := range []struct {
				name  string
				level int
			}{{"none", zlib.NoCompression}, {"huffman", zlib.HuffmanOnly}, {"best-speed", zlib.BestSpeed}, {"default", zlib.DefaultCompression}} {
				b.Run(data.name+"/"+lib+"/"+level.name, func(b *testing.B) {
					w := newWriter(level.level)
					out := &countWriter{}
					b.SetBytes(int64(len(data.b)))
					for b.Loop() {
						out.n = 0
						w.Reset(out)
						w.Write(data.b)
						w.Close()
					}
					b.ReportMetric(float64(out.n)/float64(len(data.b)), "ratio")
				})
			}
		}
	}
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

// BenchmarkHash: go-git's collision-detecting SHA-1 (what git uses too)
// against crypto/sha1, on the same tree.
func BenchmarkHash(b *testing.B) {
	tree, _ := AppendTree(nil, siblings(benchSiblings))
	b.Run("sha1cd", func(b *testing.B) {
		b.SetBytes(int64(len(tree)))
		for b.Loop() {
			hashObject(plumbing.TreeObject, tree)
		}
	})
	b.Run("crypto-sha1", func(b *testing.B) {
		b.SetBytes(int64(len(tree)))
		for b.Loop() {
			sha1.Sum(tree)
		}
	})
}

// BenchmarkRead: reading through Storer with the object cache off (a cold
// read: pread, inflate, and for the last tree of a batch its chain of 15
// deltas), against go-git's own filesystem storage on the same repository.
func BenchmarkRead(b *testing.B) {
	r := openTemp(b)
	seed := &batchSink{tb: b, b: r.NewBatch()}
	cms := newConfigMaps(seed)
	head := cms.commits(seed, plumbing.ZeroHash, 1)
	if err := r.Write(seed.b); err != nil {
		b.Fatal(err)
	}
	s := &batchSink{tb: b, b: r.NewBatch()}
	head = cms.commits(s, head, benchCommits)
	if err := r.Write(s.b); err != nil {
		b.Fatal(err)
	}
	c, err := object.GetCommit(r.Storer(), head)
	if err != nil {
		b.Fatal(err)
	}
	leaf, err := c.Tree()
	if err != nil {
		b.Fatal(err)
	}
	leaf, err = leaf.Tree("core/configmaps/default")
	if err != nil {
		b.Fatal(err)
	}
	blob := leaf.Entries[0].Hash
	r.cache = cache.NewObjectLRU(0)
	goGit := filesystem.NewStorage(osfs.New(r.Dir()), cache.NewObjectLRU(0))
	for _, tc := range []struct {
		name string
		s    interface {
			EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
		}
	}{{"gitrepo", r.Storer()}, {"go-git", goGit}} {
		for _, obj := range []struct {
			name string
			h    plumbing.Hash
		}{{"blob", blob}, {"delta-tree", leaf.Hash}} {
			b.Run(tc.name+"/"+obj.name, func(b *testing.B) {
				for b.Loop() {
					o, err := tc.s.EncodedObject(plumbing.AnyObject, obj.h)
					if err != nil {
						b.Fatal(err)
					}
					rd, _ := o.Reader()
					io.Copy(io.Discard, rd)
				}
			})
		}
	}
}
