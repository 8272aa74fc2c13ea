package gitstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkConcurrentPuts: 16 writers, single-key puts of a ConfigMap-sized
// JSON value over 1,000 keys, through the store API (no gRPC).
func BenchmarkConcurrentPuts(b *testing.B) {
	r, err := Open(filepath.Join(b.TempDir(), "heavens.git"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	br, err := r.Branch(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	value := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","uid":"6d1c1f0e-0000-4000-8000-000000000000","creationTimestamp":"2026-11-21T00:00:00Z"},"data":{"a":"` + fmt.Sprintf("%0400d", 0) + `"}}` + "\n")
	var n atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := n.Add(1)
				if i > int64(b.N) {
					return
				}
				key := fmt.Sprintf("/registry/configmaps/default/cm-%d", i%1000)
				if _, err := br.Put(context.Background(), key, value); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkOpenBranch: rebuilding the index of a branch with 2,000 commits
// over 200 keys (the cost of opening a heaven after a restart).
func BenchmarkOpenBranch(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "heavens.git")
	r, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	br, err := r.Branch(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("/registry/configmaps/default/cm-%d", i%200)
		if _, err := br.Put(context.Background(), key, []byte(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 64; i++ { // consolidate packs, as the background loop would
		if err := r.Git().Maintain(); err != nil {
			b.Fatal(err)
		}
	}
	r.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Branch(context.Background(), "bench"); err != nil {
			b.Fatal(err)
		}
		r.Close()
	}
}
