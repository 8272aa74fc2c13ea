package integration

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/heaven-dev/heaven/pkg/server"
)

// oidcIssuer is an OpenID Connect issuer served by the test: discovery,
// its key set, and tokens it signs.
type oidcIssuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newOIDCIssuer(t *testing.T) *oidcIssuer {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	iss := &oidcIssuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": iss.srv.URL, "jwks_uri": iss.srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256",
			"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	iss.srv = httptest.NewTLSServer(mux)
	t.Cleanup(iss.srv.Close)
	return iss
}

// token signs an ID token for sub in groups.
func (i *oidcIssuer) token(t *testing.T, sub string, groups ...string) string {
	b64json := func(v any) string {
		data, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(data)
	}
	now := time.Now()
	signed := b64json(map[string]string{"alg": "RS256", "kid": "k1", "typ": "JWT"}) + "." + b64json(map[string]any{
		"iss": i.srv.URL, "aud": "heaven", "sub": sub, "groups": groups,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	})
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, digest[:])
	require.NoError(t, err)
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// config is an AuthenticationConfiguration trusting the issuer.
func (i *oidcIssuer) config(t *testing.T) string {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: i.srv.Certificate().Raw})
	indented := "      " + strings.ReplaceAll(strings.TrimSpace(string(ca)), "\n", "\n      ")
	path := filepath.Join(t.TempDir(), "authentication.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [heaven]
    certificateAuthority: |
%s
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: ""}
`, i.srv.URL, indented)), 0o600))
	return path
}

// TestOIDCTokens: bearer tokens of a JWT issuer configured with
// --authentication-config authenticate, with kube-apiserver's claim
// mappings; a token signed by anyone else is 401.
func TestOIDCTokens(t *testing.T) {
	iss := newOIDCIssuer(t)
	ts := startServer(t, "", func(o *server.Options) { o.AuthenticationConfig = iss.config(t) })
	ctx := t.Context()
	withToken := func(heaven, token string) kubernetes.Interface {
		cfg := ts.restConfig(heaven)
		cfg = &rest.Config{Host: cfg.Host, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, CAFile: cfg.CAFile}, BearerToken: token}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}

	// An administrator by the token's groups creates a heaven by naming it.
	_, err := withToken("made-by-token", iss.token(t, "root-user", server.AdministratorsGroup)).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.NoError(t, err)
	// Anybody else is who the token says, and not an administrator.
	_, err = withToken("not-by-alice", iss.token(t, "alice", "devs")).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "want 403, got %v", err)
	require.Contains(t, err.Error(), `user "oidc:alice"`)

	// A token in the issuer's name that it did not sign.
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	forged := (&oidcIssuer{srv: iss.srv, key: otherKey}).token(t, "root-user", server.AdministratorsGroup)
	_, err = withToken("made-by-token", forged).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsUnauthorized(err), "want 401, got %v", err)
}
