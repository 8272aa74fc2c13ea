package server

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/authorization"
)

// authorizeIn asks heaven's own authorizer (pkg/deputy): server
// administrators are allowed everywhere without starting anything; a
// heaven that does not exist allows nobody else.
func (s *Server) authorizeIn(ctx context.Context, heaven string, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if authorization.IsAdministrator(a.GetUser()) {
		return authorizer.DecisionAllow, "", nil
	}
	exists, err := s.heavenExists(ctx, heaven)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	if !exists {
		return authorizer.DecisionDeny, fmt.Sprintf("heaven %s does not exist", heaven), nil
	}
	srv, release, err := s.heavens.acquire(withLoopback(ctx), heaven, false, true)
	if err != nil {
		return authorizer.DecisionNoOpinion, "", err
	}
	defer release()
	return srv.Authorize(ctx, a)
}

// branchExists says whether heaven has a git branch.
func (s *Server) branchExists(ctx context.Context, heaven string) (bool, error) {
	exists, _, _, err := s.branchInfo(ctx, heaven)
	return exists, err
}
