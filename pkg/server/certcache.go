package server

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// cachedX509 authenticates client certificates as k8s.io/apiserver's x509
// authenticator does, but verifies each certificate's chain once rather
// than on every request: an ECDSA verification per request was an eighth
// of the server's CPU under load. A certificate is verified again once it
// leaves its validity period; the user conversion (which checks
// revocations) runs on every request.
type cachedX509 struct {
	opts x509.VerifyOptions
	user x509request.UserConversion

	mu       sync.Mutex
	verified map[[sha256.Size]byte]time.Time // certificate → valid until
}

// maxVerifiedCerts bounds the cache; past it, it starts over.
const maxVerifiedCerts = 4096

func newCachedX509(opts x509.VerifyOptions, user x509request.UserConversion) *cachedX509 {
	return &cachedX509{opts: opts, user: user, verified: map[[sha256.Size]byte]time.Time{}}
}

func (a *cachedX509) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	cert := req.TLS.PeerCertificates[0]
	key := sha256.Sum256(cert.Raw)
	now := time.Now()
	a.mu.Lock()
	until, ok := a.verified[key]
	a.mu.Unlock()
	if ok && now.Before(until) && !now.Before(cert.NotBefore) {
		return a.user.User([]*x509.Certificate{cert})
	}
	opts := a.opts
	if len(req.TLS.PeerCertificates) > 1 {
		opts.Intermediates = x509.NewCertPool()
		for _, c := range req.TLS.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
	}
	chains, err := cert.Verify(opts)
	if err != nil {
		return nil, false, fmt.Errorf("verifying certificate %q failed: %w", cert.Subject.CommonName, err)
	}
	valid := cert.NotAfter
	for _, c := range chains[0] {
		if c.NotAfter.Before(valid) {
			valid = c.NotAfter
		}
	}
	a.mu.Lock()
	if len(a.verified) >= maxVerifiedCerts {
		a.verified = map[[sha256.Size]byte]time.Time{}
	}
	a.verified[key] = valid
	a.mu.Unlock()
	return a.user.User(chains[0])
}
