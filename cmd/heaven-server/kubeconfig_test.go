package main

import (
	"crypto/x509"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/heaven-dev/heaven/pkg/pki"
)

func TestKubeconfigForAUserAndAHeaven(t *testing.T) {
	o := NewKubeconfigOptions()
	o.DataDir = t.TempDir()
	bundle, err := pki.Ensure(filepath.Join(o.DataDir, "pki"), nil)
	require.NoError(t, err)
	o.User, o.Groups, o.Heaven = "alice", []string{"devs", "ops"}, "team-a"
	o.ExternalHost, o.SecurePort = "heaven.example.com", 7443
	require.Empty(t, o.Validate())
	data, err := o.kubeconfig()
	require.NoError(t, err)

	cfg, err := clientcmd.Load(data)
	require.NoError(t, err)
	assert.Equal(t, "alice@team-a", cfg.CurrentContext)
	assert.Equal(t, "https://heaven.example.com:7443/clusters/team-a", cfg.Clusters["team-a"].Server)
	certs, err := certutil.ParseCertsPEM(cfg.AuthInfos["alice"].ClientCertificateData)
	require.NoError(t, err)
	assert.Equal(t, "alice", certs[0].Subject.CommonName)
	assert.ElementsMatch(t, []string{"devs", "ops"}, certs[0].Subject.Organization)
	_, err = certs[0].Verify(x509VerifyOptions(bundle))
	assert.NoError(t, err, "signed by the server's CA")

	bad := NewKubeconfigOptions()
	bad.Heaven = "Not/A/Heaven"
	assert.Len(t, bad.Validate(), 2, "no user, and a bad heaven name")
}

func x509VerifyOptions(b *pki.Bundle) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: b.CAPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}
