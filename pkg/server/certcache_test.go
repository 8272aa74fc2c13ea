package server

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	certutil "k8s.io/client-go/util/cert"

	"github.com/heaven-dev/heaven/pkg/pki"
)

func TestCachedX509(t *testing.T) {
	bundle, err := pki.Ensure(t.TempDir(), nil)
	require.NoError(t, err)
	other, err := pki.Ensure(t.TempDir(), nil)
	require.NoError(t, err)
	a := newCachedX509(verifyOptions(bundle), unlessRevoked(bundle.Revocations, x509request.CommonNameUserConversion))
	request := func(b *pki.Bundle, user string, groups ...string) *http.Request {
		certPEM, _, err := b.IssueClientCert(user, groups, time.Hour)
		require.NoError(t, err)
		certs, err := certutil.ParseCertsPEM(certPEM)
		require.NoError(t, err)
		return &http.Request{TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{certs[0]}}}
	}

	alice := request(bundle, "alice", "devs")
	for range 2 { // verified, then from the cache
		resp, ok, err := a.AuthenticateRequest(alice)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "alice", resp.User.GetName())
		require.Equal(t, []string{"devs"}, resp.User.GetGroups())
	}
	require.Len(t, a.verified, 1)

	_, ok, err := a.AuthenticateRequest(request(other, "mallory"))
	require.Error(t, err, "another CA's certificate")
	require.False(t, ok)

	require.NoError(t, bundle.Revocations.Revoke("alice"))
	_, ok, err = a.AuthenticateRequest(alice)
	require.Error(t, err, "revoked, although verified before")
	require.False(t, ok)

	_, ok, _ = a.AuthenticateRequest(&http.Request{})
	require.False(t, ok, "no TLS, no user")
}
