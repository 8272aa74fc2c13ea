package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/authorization"
	"github.com/heaven-dev/heaven/pkg/deputy"
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

// syncTargetRights answers, for the syncers' authorizer, whether the user
// a SyncTarget acts for (pkg/deputy) still holds the rights its sync
// exercises; a revoked right stops its syncer within syncTargetRecheck.
// SyncTargets made before requesters were recorded, or by heaven-server,
// act for nobody and are not checked.
type syncTargetRights struct {
	get       func(ctx context.Context, name string) (*v1alpha1.SyncTarget, error)
	authorize deputy.Authorizer

	mu      sync.Mutex
	checked map[string]syncTargetCheck
}

type syncTargetCheck struct {
	ok     bool
	reason string
	at     time.Time
}

// syncTargetRecheck is how long an answer stands.
const syncTargetRecheck = 5 * time.Second

func (r *syncTargetRights) authorized(ctx context.Context, target string) (bool, string) {
	r.mu.Lock()
	c, ok := r.checked[target]
	r.mu.Unlock()
	if ok && time.Since(c.at) < syncTargetRecheck {
		return c.ok, c.reason
	}
	c = r.check(ctx, target)
	r.mu.Lock()
	r.checked[target] = c
	r.mu.Unlock()
	return c.ok, c.reason
}

func (r *syncTargetRights) check(ctx context.Context, target string) syncTargetCheck {
	now := time.Now()
	st, err := r.get(ctx, target)
	if apierrors.IsNotFound(err) {
		return syncTargetCheck{ok: true, at: now} // the front already scoped it; its finalizer is at work
	}
	if err != nil {
		return syncTargetCheck{reason: fmt.Sprintf("checking SyncTarget %s: %v", target, err), at: now}
	}
	requester, ok := deputy.Requester(st)
	if !ok {
		return syncTargetCheck{ok: true, at: now}
	}
	if err := deputy.Check(ctx, r.authorize, requester, deputy.SyncTargetRights(st)); err != nil {
		return syncTargetCheck{reason: fmt.Sprintf("SyncTarget %s acts for a user who lost a right: %v", target, err), at: now}
	}
	return syncTargetCheck{ok: true, at: now}
}

// getSyncTarget reads a SyncTarget from root.
func (s *Server) getSyncTarget(ctx context.Context, name string) (*v1alpha1.SyncTarget, error) {
	root, err := s.loopbackHeaven(RootHeaven)
	if err != nil {
		return nil, err
	}
	return root.HeavenV1alpha1().SyncTargets().Get(ctx, name, metav1.GetOptions{})
}
