package heavenapi

import (
	"strings"

	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
)

// AuditAnnotation names the heaven in every audit event.
const AuditAnnotation = "heaven.dev/heaven"

// Audit is heaven-server's one audit log (k8s.io/apiserver's backends and
// policy, from kube-apiserver's --audit-* flags), which every heaven writes
// to.
type Audit struct {
	Backend audit.Backend
	Policy  audit.PolicyRuleEvaluator
}

// heavenAudit is a heaven's view of the shared backend: its events name
// the heaven (annotation heaven.dev/heaven, and the request URI as the
// client sent it, with /clusters/<name>). heaven-server runs and shuts
// down the shared backend; a heaven that stops must not.
type heavenAudit struct {
	audit.Backend
	heaven, prefix string
}

func newHeavenAudit(heaven string, shared audit.Backend) audit.Backend {
	return heavenAudit{Backend: shared, heaven: heaven, prefix: "/clusters/" + heaven}
}

// ProcessEvents names the heaven in each event. The API server hands the
// same event over at each stage of a request, so this changes it once.
func (a heavenAudit) ProcessEvents(events ...*auditinternal.Event) bool {
	for _, ev := range events {
		if ev.Annotations[AuditAnnotation] == a.heaven {
			continue
		}
		if ev.Annotations == nil {
			ev.Annotations = map[string]string{}
		}
		ev.Annotations[AuditAnnotation] = a.heaven
		if !strings.HasPrefix(ev.RequestURI, a.prefix+"/") {
			ev.RequestURI = a.prefix + ev.RequestURI
		}
	}
	return a.Backend.ProcessEvents(events...)
}

func (heavenAudit) Run(<-chan struct{}) error { return nil }
func (heavenAudit) Shutdown()                 {}
func (a heavenAudit) String() string          { return "heaven " + a.heaven + ": " + a.Backend.String() }
