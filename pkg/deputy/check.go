package deputy

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Authorizer asks heaven's own authorizer. A heaven that does not exist
// answers only for server administrators.
type Authorizer func(ctx context.Context, heaven string, a authorizer.Attributes) (authorizer.Decision, string, error)

// Check returns an error naming the first of rights that u does not hold.
func Check(ctx context.Context, authorize Authorizer, u user.Info, rights []Right) error {
	for _, r := range rights {
		decision, reason, err := authorize(ctx, r.Heaven, r.Attributes(u))
		if err != nil {
			return fmt.Errorf("checking whether user %q may %s: %w", u.GetName(), r, err)
		}
		if decision != authorizer.DecisionAllow {
			if reason != "" {
				reason = ": " + reason
			}
			return &MissingRightError{User: u.GetName(), Right: r, Reason: reason}
		}
	}
	return nil
}

// MissingRightError says which right a user lacks.
type MissingRightError struct {
	User   string
	Right  Right
	Reason string
}

func (e *MissingRightError) Error() string {
	return fmt.Sprintf("user %q may not %s%s", e.User, e.Right, e.Reason)
}

// RequesterAnnotation records on whose behalf heaven-server acts for an
// object: the user who created it or last changed its spec, with groups.
// The server sets it; a client cannot.
const RequesterAnnotation = "heaven.dev/requester"

// requester is the annotation's value.
type requester struct {
	User   string   `json:"user"`
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

func encodeRequester(u user.Info) string {
	data, _ := json.Marshal(requester{User: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups()})
	return string(data)
}

// Requester is who obj acts for; false for an object made before
// requesters were recorded (heaven-server's own, or an administrator's).
func Requester(obj any) (user.Info, bool) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	raw, ok := m.GetAnnotations()[RequesterAnnotation]
	if !ok {
		return nil, false
	}
	var r requester
	if err := json.Unmarshal([]byte(raw), &r); err != nil || r.User == "" {
		return nil, false
	}
	return &user.DefaultInfo{Name: r.User, UID: r.UID, Groups: r.Groups}, true
}
