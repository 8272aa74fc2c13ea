package main

import (
	"bytes"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/yaml"

	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

func TestSyncerManifestsPrintsAScopedInstall(t *testing.T) {
	o := NewSyncerManifestsOptions()
	o.DataDir = t.TempDir()
	_, err := pki.Ensure(filepath.Join(o.DataDir, "pki"), nil)
	require.NoError(t, err)
	o.SyncTarget, o.Heaven, o.Resources = "east", "team-a", []string{"configmaps", "deployments.apps"}
	o.ExternalHost, o.SecurePort = "heaven.example.com", 7443
	require.Empty(t, o.Validate())
	var out bytes.Buffer
	require.NoError(t, o.Run(&out))

	var kinds []string
	var kubeconfig []byte
	for _, doc := range strings.Split(out.String(), "---\n") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		kinds = append(kinds, obj["kind"].(string))
		if obj["kind"] == "Secret" {
			data := obj["data"].(map[string]any)[install.KubeconfigKey].(string)
			kubeconfig, err = base64.StdEncoding.DecodeString(data)
			require.NoError(t, err)
		}
	}
	assert.Equal(t, []string{"Namespace", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Secret", "Deployment"}, kinds)
	assert.Contains(t, out.String(), "image: "+install.DefaultImage)
	assert.Contains(t, out.String(), "#   spec: {heaven: team-a, resources: [configmaps, deployments.apps]}")
	cred, err := install.ParseKubeconfig(kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, "https://heaven.example.com:7443/clusters/team-a", cred.Server)
	certs, err := certutil.ParseCertsPEM(cred.CertPEM)
	require.NoError(t, err)
	assert.Equal(t, pki.SyncerUser("team-a", "east"), certs[0].Subject.CommonName)
	assert.Equal(t, []string{pki.SyncerGroup}, certs[0].Subject.Organization)
}

func TestSyncerManifestsOptionsValidate(t *testing.T) {
	o := NewSyncerManifestsOptions()
	assert.Len(t, o.Validate(), 2, "--sync-target and --heaven are required")
	o.SyncTarget, o.Heaven = "east", "team-a"
	assert.Empty(t, o.Validate())
	o.Resources = []string{"Bad.apps"}
	o.SecurePort = 0
	assert.Len(t, o.Validate(), 2)
}
