package heavenapi

import (
	"net/http"

	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// ownWatchHandler serves the watches a heaven's own clients open on it
// (the informers of its admission plugins and controllers, about ten per
// running heaven, each open for the heaven's life): upstream's API
// handlers (the director) behind only the filter they need, the one that
// parses the request (RequestInfo).
//
// Through the whole handler chain, each such watch kept the chain's frames
// (some 60, authentication to tracing) on its goroutine's stack for its
// whole life, about 16 KiB a watch. For these requests the chain decides
// nothing: heaven-server's front has authenticated them (the loopback
// user, in system:masters, whom the authorizer allows everything and
// fairness exempts), they impersonate nobody (the front sends those
// through the chain), and a watch has neither admission nor a deadline.
// What they go without: audit events (the audit log has the heaven's own
// lists and writes, not its informers' watches) and request metrics.
func ownWatchHandler(s *genericapiserver.GenericAPIServer, resolver request.RequestInfoResolver) http.Handler {
	return genericapifilters.WithRequestInfo(s.Handler.Director, resolver)
}
