package synctarget

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	certutil "k8s.io/client-go/util/cert"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// credential is the syncer's kubeconfig for its heaven: with the client
// certificate installed before if that one is still good (issued by the
// CA to the same identity, younger than half its lifetime), else with a
// new one. rotateAt is when it is to be replaced.
func (c *Controller) credential(ctx context.Context, cluster dynamic.Interface, st *v1alpha1.SyncTarget) (kubeconfig []byte, rotateAt time.Time, err error) {
	user := pki.SyncerUser(st.Spec.Heaven, st.Name)
	old, err := installedKubeconfig(ctx, cluster, st.Name)
	if err != nil {
		return nil, time.Time{}, err
	}
	certPEM, keyPEM, rotateAt, ok := ReusableCredential(old, user, pki.SyncerGroup, c.deps.CAPool, c.opts.Now())
	if !ok {
		if certPEM, keyPEM, err = c.deps.Issue(user, []string{pki.SyncerGroup}, c.opts.CredentialValidity); err != nil {
			return nil, time.Time{}, fmt.Errorf("issuing the syncer's certificate: %w", err)
		}
		cert, err := parseCert(certPEM)
		if err != nil {
			return nil, time.Time{}, err
		}
		rotateAt = halfLife(cert)
	}
	kubeconfig, err = install.Kubeconfig(c.deps.ServerURL, st.Spec.Heaven, c.deps.CAPEM, certPEM, keyPEM)
	return kubeconfig, rotateAt, err
}

// installedKubeconfig is the kubeconfig in the installed Secret, nil if
// there is none.
func installedKubeconfig(ctx context.Context, cluster dynamic.Interface, target string) ([]byte, error) {
	secret, err := cluster.Resource(install.SecretsResource).Namespace(install.Namespace(target)).
		Get(ctx, install.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the installed Secret: %w", err)
	}
	encoded, _, _ := unstructured.NestedString(secret.Object, "data", install.KubeconfigKey)
	data, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, nil // unusable: replaced
	}
	return data, nil
}

// ReusableCredential returns the client certificate and key of an
// installed kubeconfig if they may stay: the certificate is for user in
// group, chains to the CA for client auth, matches its key, and is younger
// than half its lifetime at now. rotateAt is when it gets that old.
func ReusableCredential(kubeconfig []byte, user, group string, pool *x509.CertPool, now time.Time) (certPEM, keyPEM []byte, rotateAt time.Time, ok bool) {
	if len(kubeconfig) == 0 {
		return nil, nil, time.Time{}, false
	}
	cred, err := install.ParseKubeconfig(kubeconfig)
	if err != nil {
		return nil, nil, time.Time{}, false
	}
	if _, err := tls.X509KeyPair(cred.CertPEM, cred.KeyPEM); err != nil {
		return nil, nil, time.Time{}, false
	}
	cert, err := parseCert(cred.CertPEM)
	if err != nil || cert.Subject.CommonName != user || !contains(cert.Subject.Organization, group) {
		return nil, nil, time.Time{}, false
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, nil, time.Time{}, false
	}
	rotateAt = halfLife(cert)
	if !now.Before(rotateAt) {
		return nil, nil, time.Time{}, false
	}
	return cred.CertPEM, cred.KeyPEM, rotateAt, true
}

// HalfLife is when a certificate (PEM) is half as old as it is valid for:
// when to replace it.
func HalfLife(certPEM []byte) (time.Time, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return halfLife(cert), nil
}

// halfLife is when a certificate is half as old as it is valid for.
func halfLife(cert *x509.Certificate) time.Time {
	return cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) / 2)
}

func parseCert(certPEM []byte) (*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, err
	}
	return certs[0], nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
