package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/authorization"
	"github.com/heaven-dev/heaven/pkg/heavenapi"
	"github.com/heaven-dev/heaven/pkg/heavenapi/storage"
)

// A heaven can be read as it was at a revision: /clusters/<name>@<revision>
// serves the heaven's API over its branch as of that revision (from git
// past the compaction point: every commit stays), read-only. Such a view
// is a registry entry of its own, started on first use and stopped when
// idle like a heaven; it shares the heaven's open branch. Who may read it
// is what the heaven's RBAC says now, not what it said then.

// viewSeparator separates a heaven's name from a revision.
const viewSeparator = "@"

// splitView splits "<name>@<revision>"; ok is false for a plain name.
func splitView(name string) (heaven string, rev int64, ok bool, err error) {
	heaven, r, found := strings.Cut(name, viewSeparator)
	if !found {
		return name, 0, false, nil
	}
	if err := ValidateHeavenName(heaven); err != nil {
		return "", 0, true, err
	}
	rev, perr := strconv.ParseInt(r, 10, 64)
	if perr != nil || rev <= 0 {
		return "", 0, true, fmt.Errorf("%q: the revision after %s must be a positive number", name, viewSeparator)
	}
	return heaven, rev, true, nil
}

// branchOf is the heaven whose branch a registry entry serves.
func branchOf(name string) string {
	heaven, _, _ := strings.Cut(name, viewSeparator)
	return heaven
}

// readVerbs are the methods a view answers.
var readVerbs = map[string]bool{http.MethodGet: true, http.MethodHead: true}

// errFutureRevision: a view of a revision the heaven has not reached.
var errFutureRevision = errors.New("the heaven has not reached that revision")

// viewAllowed says whether the view name of heaven at rev may start: the
// heaven must exist and have reached rev. Views are never created on first
// use and need the git store.
func (s *Server) viewAllowed(ctx context.Context, heaven string, rev int64) (bool, error) {
	if s.repo == nil {
		return false, nil
	}
	exists, err := s.heavenExists(ctx, heaven)
	if err != nil || !exists {
		return false, err
	}
	_, current, err := s.repo.HeadRevision(heaven)
	if err != nil {
		return false, err
	}
	if current < 0 { // the head commit does not say: the open branch knows
		b, err := s.repo.Branch(ctx, heaven)
		if err != nil {
			return false, err
		}
		current = b.Revision()
	}
	if rev > current {
		return false, fmt.Errorf("%w: heaven %s is at revision %d", errFutureRevision, heaven, current)
	}
	return true, nil
}

// newView builds the read-only API server of heaven as of rev.
func (s *Server) newView(name, heaven string, rev int64) (*heavenapi.Server, error) {
	_, port, _ := net.SplitHostPort(s.listener.Addr().String())
	typ, err := s.heavenType(heaven)
	if err != nil {
		return nil, err
	}
	b, err := s.repo.Branch(context.Background(), heaven)
	if err != nil {
		return nil, fmt.Errorf("opening the branch of heaven %s: %w", heaven, err)
	}
	return heavenapi.New(heavenapi.Config{
		Name:            name,
		Kubernetes:      typ == v1alpha1.HeavenTypeKubernetes,
		ReadOnly:        true,
		Clients:         storage.Clients{Git: storage.NewBranchClientAt(b, s.repo, rev), Ephemeral: s.etcd.client},
		Ephemeral:       func(gr schema.GroupResource) bool { return s.ephemeral[gr] },
		Loopback:        s.loopbackConfig(name),
		ExternalAddress: net.JoinHostPort(s.cfg.externalHost(), port),
		Authorizers:     []authorization.Named{s.liveAuthorizer(heaven)},
		Audit:           s.audit.heavens(),
	})
}

// liveAuthorizer answers for a view as heaven's authorizer answers now,
// allowing or denying: the view's own RBAC objects are history.
func (s *Server) liveAuthorizer(heaven string) authorization.Named {
	return authorization.Named{AuthorizerName: "heaven " + heaven + " now", Authorizer: authorizer.AuthorizerFunc(
		func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			d, reason, err := s.authorizeIn(ctx, heaven, a)
			if err != nil || d != authorizer.DecisionAllow {
				return authorizer.DecisionDeny, reason, err
			}
			return d, reason, nil
		})}
}
