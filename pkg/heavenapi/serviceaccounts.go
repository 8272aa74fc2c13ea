package heavenapi

import (
	"context"
	"crypto"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

// ServiceAccounts is how a heaven issues and accepts ServiceAccount tokens
// (the TokenRequest API, `kubectl create token`): Kubernetes' own bound
// tokens, signed with heaven-server's one key and naming the heaven in
// their issuer and audience, so that a heaven accepts only the tokens it
// issued, and only while the ServiceAccount (and the Secret it is bound
// to) still exists.
type ServiceAccounts struct {
	// Issuer is the heaven's issuer URL: <server URL>/clusters/<name>.
	Issuer string
	// Key signs the tokens.
	Key crypto.Signer
}

// generator is the heaven's token issuer, nil without ServiceAccounts.
func (c *Config) tokenGenerator() (serviceaccount.TokenGenerator, authenticator.Audiences, error) {
	if c.ServiceAccounts == nil {
		return nil, nil, nil
	}
	g, err := serviceaccount.JWTTokenGenerator(c.ServiceAccounts.Issuer, c.ServiceAccounts.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("service account tokens: %w", err)
	}
	return g, authenticator.Audiences{c.ServiceAccounts.Issuer}, nil
}

// tokenAuthenticator accepts the heaven's own tokens; nil without
// ServiceAccounts.
func (c *Config) tokenAuthenticator(kube kubernetes.Interface) (authenticator.Token, error) {
	if c.ServiceAccounts == nil {
		return nil, nil
	}
	keys, err := serviceaccount.StaticPublicKeysGetter([]any{c.ServiceAccounts.Key.Public()})
	if err != nil {
		return nil, err
	}
	issuer := c.ServiceAccounts.Issuer
	return serviceaccount.JWTTokenAuthenticator([]string{issuer}, keys, authenticator.Audiences{issuer},
		serviceaccount.NewValidator(clientGetter{kube})), nil
}

// clientGetter reads what a token is bound to through the heaven's
// loopback client (as kube-apiserver does before its informers sync).
type clientGetter struct{ kube kubernetes.Interface }

func (g clientGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return g.kube.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g clientGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return g.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g clientGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return g.kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g clientGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	return g.kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

func (g clientGetter) GetValidatingWebhookConfiguration(ctx context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return g.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
}

func (g clientGetter) GetMutatingWebhookConfiguration(ctx context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return g.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
}

// AuthenticateToken authenticates a token the heaven issued: false for
// any other token (another heaven's among them).
func (s *Server) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if s.tokens == nil {
		return nil, false, nil
	}
	return s.tokens.AuthenticateToken(ctx, token)
}
