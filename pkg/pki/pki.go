// Package pki creates, on first start, the certificate authority, the
// serving certificate and the admin client certificate of heaven-server, and
// writes the admin kubeconfig. Later starts load what is there.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// AdminUser and AdminGroup are the identity of the admin client certificate.
const (
	AdminUser  = "heaven-admin"
	AdminGroup = "system:masters"
	validFor   = 10 * 365 * 24 * time.Hour
)

// Bundle is the loaded PKI.
type Bundle struct {
	Dir string
	// CA signs the serving and client certificates and verifies clients.
	CA     *x509.Certificate
	CAPool *x509.CertPool
	// Serving is the TLS serving certificate.
	Serving tls.Certificate
	// AdminCertPEM and AdminKeyPEM are the admin client credentials.
	AdminCertPEM, AdminKeyPEM []byte
	// Revocations are the users whose certificates were revoked.
	Revocations *Revocations
	// ServiceAccountKey signs the ServiceAccount tokens of every heaven
	// (each names its heaven as issuer).
	ServiceAccountKey crypto.Signer
	caPEM             []byte
	caKey             crypto.Signer
}

// Ensure loads the PKI from dir, creating what is missing. hosts are the
// serving certificate's DNS names and IP addresses besides localhost; a
// serving certificate that lacks one of them is reissued.
func Ensure(dir string, hosts []string) (*Bundle, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	caCert, caKey, err := ensureCA(dir)
	if err != nil {
		return nil, err
	}
	b, err := newBundle(dir, caCert, caKey)
	if err != nil {
		return nil, err
	}

	hosts = append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	servingTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "heaven-server"},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			servingTmpl.IPAddresses = append(servingTmpl.IPAddresses, ip)
		} else if h != "" {
			servingTmpl.DNSNames = append(servingTmpl.DNSNames, h)
		}
	}
	certPEM, keyPEM, err := ensureLeaf(dir, "serving", servingTmpl, caCert, caKey, func(c *x509.Certificate) bool {
		for _, h := range hosts {
			if h != "" && c.VerifyHostname(h) != nil {
				return false
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	if b.Serving, err = tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}

	adminTmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	b.AdminCertPEM, b.AdminKeyPEM, err = ensureLeaf(dir, "admin", adminTmpl, caCert, caKey, nil)
	if err != nil {
		return nil, err
	}
	if b.ServiceAccountKey, err = ensureKey(filepath.Join(dir, "service-account.key")); err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	return b, nil
}

// LoadCA loads the certificate authority of dir, which Ensure created
// before; it creates nothing. The bundle has no serving or admin
// certificate: it issues client certificates (IssueClientCert).
func LoadCA(dir string) (*Bundle, error) {
	caCert, caKey, err := load(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key"))
	if err != nil {
		return nil, fmt.Errorf("loading the certificate authority of %s (start heaven-server once to create it): %w", dir, err)
	}
	return newBundle(dir, caCert, caKey)
}

func newBundle(dir string, caCert *x509.Certificate, caKey crypto.Signer) (*Bundle, error) {
	b := &Bundle{Dir: dir, CA: caCert, CAPool: x509.NewCertPool(), caKey: caKey}
	b.CAPool.AddCert(caCert)
	var err error
	if b.caPEM, err = os.ReadFile(filepath.Join(dir, "ca.crt")); err != nil {
		return nil, err
	}
	if b.Revocations, err = loadRevocations(dir); err != nil {
		return nil, err
	}
	return b, nil
}

// CAPEM is the CA certificate, PEM-encoded, for clients' kubeconfigs.
func (b *Bundle) CAPEM() []byte { return b.caPEM }

// IssueClientCert issues a client certificate signed by the CA for user
// commonName in groups organizations, valid from an hour ago (clock skew)
// for validFor. It returns the certificate and its new key, PEM-encoded.
func (b *Bundle) IssueClientCert(commonName string, organizations []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: commonName, Organization: organizations},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, key, err := sign(tmpl, b.CA, b.caKey, time.Now().Add(-backdate), validFor+backdate)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, err
	}
	if certPEM, err = certutil.EncodeCertificates(&x509.Certificate{Raw: der}); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

// sign issues a certificate from tmpl with a new key, valid from notBefore
// for lifetime.
func sign(tmpl, ca *x509.Certificate, caKey crypto.Signer, notBefore time.Time, lifetime time.Duration) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(math.MaxInt64))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = notBefore.UTC()
	tmpl.NotAfter = notBefore.Add(lifetime).UTC()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	return der, key, err
}

// WriteKubeconfig writes a kubeconfig with the admin credentials and one
// context per heaven, "server" being the front's base URL
// (https://host:port); the first heaven is the current context.
func (b *Bundle) WriteKubeconfig(path, server string, heavens ...string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: b.AdminCertPEM, ClientKeyData: b.AdminKeyPEM}
	for i, h := range heavens {
		cfg.Clusters[h] = &clientcmdapi.Cluster{Server: server + "/clusters/" + h, CertificateAuthorityData: b.caPEM}
		cfg.Contexts[h] = &clientcmdapi.Context{Cluster: h, AuthInfo: "admin"}
		if i == 0 {
			cfg.CurrentContext = h
		}
	}
	return clientcmd.WriteToFile(*cfg, path)
}

func ensureCA(dir string) (*x509.Certificate, crypto.Signer, error) {
	certPath, keyPath := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if c, k, err := load(certPath, keyPath); err == nil {
		return c, k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	c, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "heaven-ca"}, key)
	if err != nil {
		return nil, nil, err
	}
	if err := write(certPath, keyPath, c.Raw, key); err != nil {
		return nil, nil, err
	}
	return c, key, nil
}

// ensureKey loads the private key at path, or creates it.
func ensureKey(path string) (crypto.Signer, error) {
	key, err := keyutil.PrivateKeyFromFile(path)
	if errors.Is(err, os.ErrNotExist) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		keyPEM, err := keyutil.MarshalPrivateKeyToPEM(k)
		if err != nil {
			return nil, err
		}
		return k, keyutil.WriteKey(path, keyPEM)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", path)
	}
	return signer, nil
}

// ensureLeaf loads <name>.crt/.key if present, signed by ca and accepted by
// ok; otherwise issues a new one from tmpl.
func ensureLeaf(dir, name string, tmpl, ca *x509.Certificate, caKey crypto.Signer, ok func(*x509.Certificate) bool) ([]byte, []byte, error) {
	certPath, keyPath := filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if c, _, err := load(certPath, keyPath); err == nil && c.CheckSignatureFrom(ca) == nil && (ok == nil || ok(c)) {
		certPEM, err1 := os.ReadFile(certPath)
		keyPEM, err2 := os.ReadFile(keyPath)
		return certPEM, keyPEM, errors.Join(err1, err2)
	}
	der, key, err := sign(tmpl, ca, caKey, time.Now().Add(-time.Hour), validFor+time.Hour)
	if err != nil {
		return nil, nil, err
	}
	if err := write(certPath, keyPath, der, key); err != nil {
		return nil, nil, err
	}
	certPEM, err1 := os.ReadFile(certPath)
	keyPEM, err2 := os.ReadFile(keyPath)
	return certPEM, keyPEM, errors.Join(err1, err2)
}

func load(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.CertsFromFile(certPath)
	if err != nil {
		if _, statErr := os.Stat(certPath); errors.Is(statErr, os.ErrNotExist) {
			return nil, nil, statErr
		}
		return nil, nil, err
	}
	key, err := keyutil.PrivateKeyFromFile(keyPath)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%s: not a signing key", keyPath)
	}
	return certs[0], signer, nil
}

func write(certPath, keyPath string, der []byte, key *ecdsa.PrivateKey) error {
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return err
	}
	if err := keyutil.WriteKey(keyPath, keyPEM); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(&x509.Certificate{Raw: der})
	if err != nil {
		return err
	}
	return certutil.WriteCert(certPath, certPEM)
}
