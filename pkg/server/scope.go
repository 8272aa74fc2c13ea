package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/authorization"
	"github.com/heaven-dev/heaven/pkg/pki"
)

// Scoped identities. Syncers (pki.SyncerGroup) are not subject to RBAC:
// the syncer of SyncTarget <target> for heaven <heaven> may do everything
// in /clusters/<heaven>/ (its certificate names the heaven; no binding in
// the heaven could say more) and, in root, reach only its own SyncTarget:
// GET, PUT and PATCH of synctargets/<target> and its status, and list and
// watch of synctargets with fieldSelector=metadata.name=<target> (what an
// informer of one object asks). The front refuses everything else with 403
// before any heaven sees it; syncerAuthorizer then allows what is left.

// syncerScope is what one syncer's credential may reach; the zero value
// (a syncer credential whose name does not parse) reaches nothing.
type syncerScope struct{ heaven, target string }

// scopeOf returns the scope of u, and false for users who are not scoped.
func scopeOf(u user.Info) (syncerScope, bool) {
	if !pki.IsSyncerUser(u.GetName(), u.GetGroups()) {
		return syncerScope{}, false
	}
	heaven, target, _ := pki.ParseSyncerUser(u.GetName())
	return syncerScope{heaven: heaven, target: target}, true
}

// syncTargetsPath is the collection of SyncTargets in a heaven.
var syncTargetsPath = "/apis/" + v1alpha1.SchemeGroupVersion.String() + "/" + v1alpha1.SyncTargetsResource.Resource

// allows says whether the scope admits a request to heaven name: path is
// the request's path below /clusters/<name> (decoded; escaped says whether
// it was sent with escapes), query its query.
func (s syncerScope) allows(name, path string, escaped bool, method string, query url.Values) bool {
	if s.heaven == "" {
		return false
	}
	if name == s.heaven {
		return true
	}
	if name != RootHeaven || escaped {
		return false
	}
	object := syncTargetsPath + "/" + s.target
	switch path {
	case object:
		return method == http.MethodGet
	case object + "/status":
		return method == http.MethodGet || method == http.MethodPut || method == http.MethodPatch
	case syncTargetsPath:
		return method == http.MethodGet && selectsOnly(query, s.target)
	}
	return false
}

// selectsOnly says whether a list or watch query selects exactly the
// object name: one fieldSelector, metadata.name=<name>.
func selectsOnly(query url.Values, name string) bool {
	if len(query["fieldSelector"]) != 1 {
		return false
	}
	sel, err := fields.ParseSelector(query.Get("fieldSelector"))
	if err != nil {
		return false
	}
	reqs := sel.Requirements()
	return len(reqs) == 1 && reqs[0].Field == "metadata.name" && reqs[0].Value == name &&
		(reqs[0].Operator == "=" || reqs[0].Operator == "==")
}

// forbidden is the answer to a scoped user's request outside its scope.
func (s syncerScope) forbidden(u user.Info, r *http.Request) apierrors.APIStatus {
	reach := "nothing: its user name is not heaven:syncer:<heaven>:<sync target>"
	if s.heaven != "" {
		reach = fmt.Sprintf("only %s%s/ and its SyncTarget %s in %s", ClustersPrefix, s.heaven, s.target, RootHeaven)
	}
	return apierrors.NewForbidden(schema.GroupResource{}, "",
		fmt.Errorf("user %q cannot %s %q: a syncer's credential reaches %s", u.GetName(), r.Method, r.URL.Path, reach))
}

// syncerAuthorizer allows the requests of heaven's syncers that the front
// let through: everything in their heaven while the user their SyncTarget
// acts for may still have it synced (syncTargetAuthorized), and their
// SyncTarget in root. Everybody else is left to RBAC.
func (s *Server) syncerAuthorizer(heaven string) authorization.Named {
	return authorization.Named{AuthorizerName: "syncers", Authorizer: authorizer.AuthorizerFunc(
		func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			scope, ok := scopeOf(a.GetUser())
			switch {
			case !ok || scope.heaven == "":
				return authorizer.DecisionNoOpinion, "", nil
			case scope.heaven == heaven:
				if ok, reason := s.syncTargets.authorized(ctx, scope.target); !ok {
					return authorizer.DecisionDeny, reason, nil
				}
				return authorizer.DecisionAllow, "", nil
			case heaven == RootHeaven && a.IsResourceRequest() && a.GetAPIGroup() == v1alpha1.GroupName &&
				a.GetResource() == v1alpha1.SyncTargetsResource.Resource && (a.GetName() == "" || a.GetName() == scope.target):
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		})}
}
