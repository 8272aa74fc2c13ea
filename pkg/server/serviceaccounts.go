package server

import (
	"context"
	"net/http"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"

	"github.com/heaven-dev/heaven/pkg/heavenapi"
)

// ServiceAccount tokens are per heaven: heaven <name> issues them as
// <server URL>/clusters/<name> (the TokenRequest API, `kubectl create
// token`), signed with the server's one service account key, and only that
// heaven accepts them, as the ServiceAccount they name; RBAC decides the
// rest. The front tries them after its own authenticators, for requests to
// the heaven whose issuer the token names.

// serviceAccounts is heaven name's token configuration.
func (s *Server) serviceAccounts(name string) *heavenapi.ServiceAccounts {
	return &heavenapi.ServiceAccounts{Issuer: s.issuer(name), Key: s.pki.ServiceAccountKey}
}

func (s *Server) issuer(name string) string { return s.URL() + ClustersPrefix + name }

// heavenTokens authenticates a request to heaven name by a token that
// heaven issued.
func (s *Server) heavenTokens(r *http.Request, name string) (*authenticator.Response, bool, error) {
	tokens := bearertoken.New(authenticator.TokenFunc(func(ctx context.Context, token string) (*authenticator.Response, bool, error) {
		return s.authenticateHeavenToken(ctx, name, token)
	}))
	return group.NewAuthenticatedGroupAdder(tokens).AuthenticateRequest(r)
}

// authenticateHeavenToken checks the token's signature and issuer before
// anything else, so that no forged token starts a heaven, and then asks the
// heaven, which checks the rest (expiry, audience, that what it is bound
// to still exists) as kube-apiserver does.
func (s *Server) authenticateHeavenToken(ctx context.Context, name, token string) (*authenticator.Response, bool, error) {
	parsed, err := jwt.ParseSigned(token)
	if err != nil {
		return nil, false, nil // not a JWT: not ours
	}
	var claims jwt.Claims
	if err := parsed.Claims(s.pki.ServiceAccountKey.Public(), &claims); err != nil || claims.Issuer != s.issuer(name) {
		return nil, false, nil // signed by someone else, or another heaven's
	}
	if exists, err := s.heavenExists(ctx, name); err != nil || !exists {
		return nil, false, err
	}
	srv, release, err := s.heavens.acquire(withLoopback(ctx), name, false, true)
	if err != nil {
		return nil, false, err
	}
	defer release()
	return srv.AuthenticateToken(ctx, token)
}

// heavenExists says whether heaven name exists, without creating it: it
// runs (a heaven created on first use has its Heaven object a moment
// later), or root has its Heaven object.
func (s *Server) heavenExists(ctx context.Context, name string) (bool, error) {
	if name == RootHeaven || s.heavens.isRunning(name) {
		return true, nil
	}
	select {
	case <-s.rootReady:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return s.heavenCtrl.Load().Exists(ctx, name)
}
