package framework

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// pki is the files of a local cluster's credentials, all in one directory:
// a CA that signs serving and client certificates, and the service-account
// token signing key pair. Keys are ECDSA P-256: quick to generate, and
// accepted by every flag that takes one.
type pki struct {
	dir               string
	ca                *x509.Certificate
	caKey             crypto.Signer
	CAFile, CAKeyFile string

	APIServerCert, APIServerKey string // serving, for kube-apiserver
	KCMCert, KCMKey             string // serving, for kube-controller-manager
	SAKey, SAPub                string // service-account token signing

	admin, kcm credentials // client certificates
}

type credentials struct{ cert, key []byte }

// newPKI creates the CA, certificates and keys in dir. serviceIP is the
// first address of the service range: pods reach the API at it.
func newPKI(dir string, serviceIP net.IP) (*pki, error) {
	p := &pki{dir: dir}
	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "heaven-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, caKey.Public(), caKey)
	if err != nil {
		return nil, err
	}
	if p.ca, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caKey = caKey
	if p.CAFile, err = p.writePEM("ca.crt", "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if p.CAKeyFile, err = p.writeKey("ca.key", caKey); err != nil {
		return nil, err
	}

	apiServerNames := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	if p.APIServerCert, p.APIServerKey, err = p.writeServing("apiserver", apiServerNames, []net.IP{net.IPv4(127, 0, 0, 1), serviceIP}); err != nil {
		return nil, err
	}
	if p.KCMCert, p.KCMKey, err = p.writeServing("kube-controller-manager", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}); err != nil {
		return nil, err
	}
	if p.admin, err = p.client(pkix.Name{CommonName: "heaven-e2e-admin", Organization: []string{"system:masters"}}); err != nil {
		return nil, err
	}
	if p.kcm, err = p.client(pkix.Name{CommonName: "system:kube-controller-manager"}); err != nil {
		return nil, err
	}
	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	if p.SAKey, err = p.writeKey("sa.key", saKey); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if p.SAPub, err = p.writePEM("sa.pub", "PUBLIC KEY", pub); err != nil {
		return nil, err
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }

// sign returns a certificate for key signed by the CA.
func (p *pki) sign(template *x509.Certificate, key crypto.Signer) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = p.ca.NotBefore
	template.NotAfter = p.ca.NotAfter
	template.KeyUsage = x509.KeyUsageDigitalSignature
	return x509.CreateCertificate(rand.Reader, template, p.ca, key.Public(), p.caKey)
}

// writeServing writes a serving certificate and its key as <name>.crt and
// <name>.key.
func (p *pki) writeServing(name string, dnsNames []string, ips []net.IP) (certFile, keyFile string, err error) {
	key, err := newKey()
	if err != nil {
		return "", "", err
	}
	der, err := p.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	}, key)
	if err != nil {
		return "", "", err
	}
	if certFile, err = p.writePEM(name+".crt", "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	keyFile, err = p.writeKey(name+".key", key)
	return certFile, keyFile, err
}

// client returns a client certificate for subject (user CommonName, groups
// Organization).
func (p *pki) client(subject pkix.Name) (credentials, error) {
	key, err := newKey()
	if err != nil {
		return credentials{}, err
	}
	der, err := p.sign(&x509.Certificate{Subject: subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, key)
	if err != nil {
		return credentials{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return credentials{}, err
	}
	return credentials{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func (p *pki) writeKey(name string, key *ecdsa.PrivateKey) (string, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	return p.writePEM(name, "EC PRIVATE KEY", der)
}

func (p *pki) writePEM(name, blockType string, der []byte) (string, error) {
	path := filepath.Join(p.dir, name)
	return path, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)
}

// writeKubeconfig writes a kubeconfig for user with creds against server,
// everything embedded, as path. Cluster and context are named cluster, so
// the kubeconfigs of several clusters can be merged (KUBECONFIG=a:b).
func (p *pki) writeKubeconfig(path, cluster, server, user string, creds credentials) error {
	ca, err := os.ReadFile(p.CAFile)
	if err != nil {
		return err
	}
	config := clientcmdapi.NewConfig()
	config.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	config.AuthInfos[cluster+"-"+user] = &clientcmdapi.AuthInfo{ClientCertificateData: creds.cert, ClientKeyData: creds.key}
	config.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: cluster + "-" + user}
	config.CurrentContext = cluster
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return nil
}
