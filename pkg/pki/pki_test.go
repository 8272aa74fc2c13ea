package pki

import (
	"crypto/tls"
	"crypto/x509"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

func TestEnsureCreatesThenLoads(t *testing.T) {
	dir := t.TempDir()
	b1, err := Ensure(dir, []string{"heaven.example"})
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(b1.Serving.Certificate[0])
	require.NoError(t, err)
	for _, h := range []string{"localhost", "127.0.0.1", "heaven.example"} {
		assert.NoError(t, leaf.VerifyHostname(h))
	}
	_, err = leaf.Verify(x509.VerifyOptions{Roots: b1.CAPool, DNSName: "heaven.example"})
	assert.NoError(t, err, "the serving certificate chains to the CA")

	b2, err := Ensure(dir, []string{"heaven.example"})
	require.NoError(t, err)
	assert.Equal(t, b1.Serving.Certificate[0], b2.Serving.Certificate[0], "a second start loads what is there")
	assert.Equal(t, b1.AdminCertPEM, b2.AdminCertPEM)

	b3, err := Ensure(dir, []string{"other.example"})
	require.NoError(t, err)
	assert.NotEqual(t, b1.Serving.Certificate[0], b3.Serving.Certificate[0], "a new host name reissues the serving certificate")
	assert.True(t, b1.CA.Equal(b3.CA), "but keeps the CA")
}

func TestWriteKubeconfig(t *testing.T) {
	dir := t.TempDir()
	b, err := Ensure(dir, nil)
	require.NoError(t, err)
	path := filepath.Join(dir, "admin.kubeconfig")
	require.NoError(t, b.WriteKubeconfig(path, "https://127.0.0.1:6443", "root", "default"))
	cfg, err := clientcmd.LoadFromFile(path)
	require.NoError(t, err)
	assert.Equal(t, "root", cfg.CurrentContext)
	assert.Equal(t, "https://127.0.0.1:6443/clusters/default", cfg.Clusters["default"].Server)
	assert.NotEmpty(t, cfg.AuthInfos["admin"].ClientCertificateData)
}

func TestIssueClientCert(t *testing.T) {
	dir := t.TempDir()
	_, err := Ensure(dir, nil)
	require.NoError(t, err)
	b, err := LoadCA(dir)
	require.NoError(t, err)
	certPEM, keyPEM, err := b.IssueClientCert(SyncerUser("team-a", "east"), []string{SyncerGroup}, 24*time.Hour)
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, "the client certificate chains to the CA")
	assert.Equal(t, "heaven:syncer:team-a:east", leaf.Subject.CommonName)
	assert.Equal(t, []string{SyncerGroup}, leaf.Subject.Organization)
	assert.WithinDuration(t, time.Now().Add(24*time.Hour), leaf.NotAfter, time.Minute)

	_, err = LoadCA(t.TempDir())
	assert.Error(t, err, "LoadCA creates nothing")
}

func TestParseSyncerUser(t *testing.T) {
	for _, tc := range []struct {
		name           string
		heaven, target string
		ok             bool
	}{
		{"heaven:syncer:team-a:east", "team-a", "east", true},
		{SyncerUser("root", "x"), "root", "x", true},
		{"heaven:syncer:team-a", "", "", false},
		{"heaven:syncer::east", "", "", false},
		{"heaven:syncer:team-a:", "", "", false},
		{"heaven:syncer:a:b:c", "", "", false},
		{"heaven-admin", "", "", false},
	} {
		h, tg, ok := ParseSyncerUser(tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.heaven, h, tc.name)
		assert.Equal(t, tc.target, tg, tc.name)
	}
	assert.True(t, IsSyncerUser("heaven:syncer:x", nil))
	assert.True(t, IsSyncerUser("someone", []string{"a", SyncerGroup}))
	assert.False(t, IsSyncerUser(AdminUser, []string{AdminGroup}))
}
