package gitrepo

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
)

// Spare temporary files for Commit's pack and index.
//
// Creating a file costs a few hundred µs in the store under load, and
// Commit used to create its two files during its own sync, where they
// could delay its return. So each Commit takes a pair created beforehand,
// and creates the next pair after its renames, while the store builds its
// next batch. The files are created read-only (git's
// mode for packs and indexes) with a writable descriptor, so no chmod
// follows. A crash leaves them behind under our temporary prefix, which
// Open removes.

type tempPair struct {
	pack, idx *os.File
}

type spareTemps struct {
	mu      sync.Mutex
	pair    *tempPair
	filling bool
	closed  bool
	wg      sync.WaitGroup // the fill in flight
}

// take returns the spare pair, if one is ready.
func (s *spareTemps) take() *tempPair {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pair
	s.pair = nil
	return p
}

// refill creates the next pair in the background unless one is there or
// on its way.
func (s *spareTemps) refill(packDir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pair != nil || s.filling || s.closed {
		return
	}
	s.filling = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		p, err := createTempPair(packDir)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.filling = false
		if err != nil {
			return // the next Commit creates its own
		}
		if s.closed || s.pair != nil {
			p.remove()
			return
		}
		s.pair = p
	}()
}

// close removes the spare pair, after waiting for one being created;
// later refills do nothing.
func (s *spareTemps) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pair != nil {
		s.pair.remove()
		s.pair = nil
	}
}

func createTempPair(packDir string) (*tempPair, error) {
	pack, err := createReadOnlyTemp(packDir, tmpPackPrefix)
	if err != nil {
		return nil, err
	}
	idx, err := createReadOnlyTemp(packDir, tmpIdxPrefix)
	if err != nil {
		pack.Close()
		os.Remove(pack.Name())
		return nil, err
	}
	return &tempPair{pack: pack, idx: idx}, nil
}

func (p *tempPair) remove() {
	for _, f := range []*os.File{p.pack, p.idx} {
		f.Close()
		os.Remove(f.Name())
	}
}

// createReadOnlyTemp creates a new file named prefix + random in dir with
// mode 0444, open for writing.
func createReadOnlyTemp(dir, prefix string) (*os.File, error) {
	var rnd [8]byte
	for {
		rand.Read(rnd[:])
		f, err := os.OpenFile(filepath.Join(dir, prefix+hex.EncodeToString(rnd[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o444)
		if os.IsExist(err) {
			continue
		}
		return f, err
	}
}
