package server

import (
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"

	"github.com/heaven-dev/heaven/pkg/heavenapi"
)

// auditLog is heaven-server's one audit log, built from kube-apiserver's
// --audit-* flags by k8s.io/apiserver; every heaven writes to it, each
// event naming its heaven.
type auditLog struct {
	*heavenapi.Audit
	stop chan struct{}
}

// newAuditLog starts the audit backends of o; nil when auditing is off
// (no policy, or nowhere to write).
func newAuditLog(o *genericoptions.AuditOptions) (*auditLog, error) {
	var c genericapiserver.Config
	if err := o.ApplyTo(&c); err != nil {
		return nil, err
	}
	if c.AuditBackend == nil || c.AuditPolicyRuleEvaluator == nil {
		return nil, nil
	}
	a := &auditLog{Audit: &heavenapi.Audit{Backend: c.AuditBackend, Policy: c.AuditPolicyRuleEvaluator}, stop: make(chan struct{})}
	if err := a.Backend.Run(a.stop); err != nil {
		return nil, err
	}
	return a, nil
}

// heavens is what heavens are given: nil when auditing is off.
func (a *auditLog) heavens() *heavenapi.Audit {
	if a == nil {
		return nil
	}
	return a.Audit
}

// close flushes the log.
func (a *auditLog) close() {
	if a == nil {
		return
	}
	close(a.stop)
	a.Backend.Shutdown()
}
