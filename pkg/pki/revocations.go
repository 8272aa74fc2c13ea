package pki

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Client certificates cannot be recalled once handed out, so a credential
// that must stop working before it expires (a deleted SyncTarget's syncer)
// is revoked by its user name: every certificate of that user issued up to
// the revocation stops authenticating. A certificate issued later (a
// SyncTarget created again under the same name) works.

// backdate is how far before its issuance a certificate's NotBefore lies
// (clock skew between hosts); issuedAt undoes it.
const backdate = time.Hour

func issuedAt(c *x509.Certificate) time.Time { return c.NotBefore.Add(backdate) }

// Revocations are the revoked users, persisted in the PKI directory.
type Revocations struct {
	path string
	mu   sync.RWMutex
	at   map[string]time.Time // user → revoked at
}

const revocationsFile = "revocations.json"

func loadRevocations(dir string) (*Revocations, error) {
	r := &Revocations{path: filepath.Join(dir, revocationsFile), at: map[string]time.Time{}}
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &r.at); err != nil {
		return nil, fmt.Errorf("%s: %w", r.path, err)
	}
	return r, nil
}

// Revoke makes every certificate of user issued until now fail
// authentication, durably. Certificate times have one-second resolution:
// one issued in the second of the revocation is revoked too.
func (r *Revocations) Revoke(user string) error {
	return r.revokeAt(user, time.Now())
}

func (r *Revocations) revokeAt(user string, at time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := make(map[string]time.Time, len(r.at)+1)
	for u, t := range r.at {
		next[u] = t
	}
	next[user] = at.UTC()
	data, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	tmp := r.path + ".tmp"
	if err := writeSynced(tmp, data); err != nil {
		return err
	}
	if err := os.Rename(tmp, r.path); err != nil {
		return err
	}
	r.at = next
	return nil
}

// Revoked says whether certificate c belongs to a revoked user and was
// issued before the revocation.
func (r *Revocations) Revoked(c *x509.Certificate) bool {
	r.mu.RLock()
	at, ok := r.at[c.Subject.CommonName]
	r.mu.RUnlock()
	return ok && !issuedAt(c).After(at)
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
