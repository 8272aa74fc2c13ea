package server

import (
	"context"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/apis/apiserver"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	requestunion "k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"

	"github.com/heaven-dev/heaven/pkg/pki"
)

// The front authenticates every request once, for every heaven:
//   - client certificates signed by the heaven CA: user = CN, groups = O,
//     as kube-apiserver does (refused once revoked, see pki.Revocations);
//   - bearer tokens of the JWT issuers of --authentication-config
//     (kube-apiserver's structured authentication configuration,
//     apiserver.config.k8s.io AuthenticationConfiguration): OIDC and other
//     JWT issuers, with kube-apiserver's claim mappings and validation;
//   - every authenticated user is also in system:authenticated.

// newAuthenticator builds the front's authenticator; lifecycle ends the
// JWT authenticators' background work (key set refreshes).
func newAuthenticator(lifecycle context.Context, bundle *pki.Bundle, authenticationConfig string) (authenticator.Request, error) {
	authns := []authenticator.Request{
		newCachedX509(verifyOptions(bundle), unlessRevoked(bundle.Revocations, x509request.CommonNameUserConversion)),
	}
	if authenticationConfig != "" {
		tokens, err := jwtAuthenticators(lifecycle, authenticationConfig)
		if err != nil {
			return nil, fmt.Errorf("--authentication-config %s: %w", authenticationConfig, err)
		}
		if len(tokens) > 0 {
			authns = append(authns, bearertoken.New(tokenunion.New(tokens...)))
		}
	}
	// Every authenticated user is in system:authenticated, as in
	// kube-apiserver: RBAC's default bindings (discovery, whoami, can-i)
	// name that group.
	return group.NewAuthenticatedGroupAdder(requestunion.New(authns...)), nil
}

// loadAuthenticationConfig reads and validates an AuthenticationConfiguration.
func loadAuthenticationConfig(path string) (*apiserver.AuthenticationConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	apiserverinstall.Install(scheme)
	obj, gvk, err := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("expected an AuthenticationConfiguration, got %s", gvk)
	}
	if errs := apiservervalidation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), cfg, nil); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// jwtAuthenticators builds a token authenticator per JWT issuer.
func jwtAuthenticators(lifecycle context.Context, path string) ([]authenticator.Token, error) {
	cfg, err := loadAuthenticationConfig(path)
	if err != nil {
		return nil, err
	}
	var out []authenticator.Token
	var errs []error
	for i, jwt := range cfg.JWT {
		opts := oidc.Options{JWTAuthenticator: jwt, SupportedSigningAlgs: []string{"RS256", "RS384", "RS512", "ES256", "ES384", "ES512"}}
		if ca := jwt.Issuer.CertificateAuthority; ca != "" {
			if opts.CAContentProvider, err = dynamiccertificates.NewStaticCAContent(fmt.Sprintf("jwt-issuer-%d", i), []byte(ca)); err != nil {
				errs = append(errs, fmt.Errorf("jwt[%d].issuer.certificateAuthority: %w", i, err))
				continue
			}
		}
		a, err := oidc.New(lifecycle, opts)
		if err != nil {
			errs = append(errs, fmt.Errorf("jwt[%d] (issuer %s): %w", i, jwt.Issuer.URL, err))
			continue
		}
		out = append(out, a)
	}
	return out, utilerrors.NewAggregate(errs)
}
