package pki

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRevocations(t *testing.T) {
	dir := t.TempDir()
	b, err := Ensure(dir, nil)
	require.NoError(t, err)
	issue := func(user string) *x509.Certificate {
		certPEM, _, err := b.IssueClientCert(user, []string{SyncerGroup}, time.Hour)
		require.NoError(t, err)
		block, _ := pem.Decode(certPEM)
		c, err := x509.ParseCertificate(block.Bytes)
		require.NoError(t, err)
		return c
	}
	before, other := issue("heaven:syncer:a:east"), issue("heaven:syncer:a:west")
	require.False(t, b.Revocations.Revoked(before))
	require.NoError(t, b.Revocations.Revoke("heaven:syncer:a:east"))
	require.True(t, b.Revocations.Revoked(before), "issued before the revocation")
	require.False(t, b.Revocations.Revoked(other), "another user")
	// Issued after a revocation (a SyncTarget created again): certificate
	// times have one-second resolution, so the revocation is put in the past.
	require.NoError(t, b.Revocations.revokeAt("heaven:syncer:a:east", time.Now().Add(-2*time.Second)))
	require.False(t, b.Revocations.Revoked(issue("heaven:syncer:a:east")), "issued after the revocation")
	require.NoError(t, b.Revocations.Revoke("heaven:syncer:a:east"))

	reloaded, err := Ensure(dir, nil)
	require.NoError(t, err)
	require.True(t, reloaded.Revocations.Revoked(before), "revocations survive a restart")
}
