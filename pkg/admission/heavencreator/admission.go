// Package heavencreator is the admission plugin of the root heaven that
// records who created each Heaven, in the annotation heaven.dev/created-by,
// as kube-apiserver records the requester of a CertificateSigningRequest:
// set by the server on create whatever the client sent, and kept unchanged
// by every update. The heaven controller makes that user an owner
// (cluster-admin) of the new heaven.
package heavencreator

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// PluginName is the plugin's name in the admission chain.
const PluginName = "HeavenCreator"

// Plugin records and protects heaven.dev/created-by, and bounds how many
// Heavens one user creates.
type Plugin struct {
	*admission.Handler
	limit Limit
}

// Limit bounds the Heavens a user who is not a server administrator may
// have created: Max (0: no bound), counted by Count.
type Limit struct {
	Max   int
	Count func(user string) int
	// Exempt says who the bound does not apply to.
	Exempt func(user.Info) bool
}

var (
	_ admission.MutationInterface   = &Plugin{}
	_ admission.ValidationInterface = &Plugin{}
)

// New returns the plugin.
func New(limit Limit) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), limit: limit}
}

// Validate refuses a Heaven beyond its creator's bound.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetOperation() != admission.Create || a.GetResource().GroupResource() != v1alpha1.HeavensResource.GroupResource() ||
		a.GetSubresource() != "" || p.limit.Max <= 0 || p.limit.Count == nil {
		return nil
	}
	u := a.GetUserInfo()
	if u == nil || (p.limit.Exempt != nil && p.limit.Exempt(u)) {
		return nil
	}
	if n := p.limit.Count(u.GetName()); n >= p.limit.Max {
		return admission.NewForbidden(a, fmt.Errorf("user %q has created %d heavens, the most a user may (--max-heavens-per-user): delete one, or ask a server administrator", u.GetName(), n))
	}
	return nil
}

// Admit sets the annotation on create to the requesting user and on update
// to what the stored object says.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != v1alpha1.HeavensResource.GroupResource() || a.GetSubresource() != "" {
		return nil
	}
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("not an object: %w", err))
	}
	creator := ""
	switch a.GetOperation() {
	case admission.Create:
		if u := a.GetUserInfo(); u != nil {
			creator = u.GetName()
		}
	case admission.Update:
		old, err := meta.Accessor(a.GetOldObject())
		if err != nil {
			return admission.NewForbidden(a, fmt.Errorf("not an object: %w", err))
		}
		creator = old.GetAnnotations()[v1alpha1.CreatedByAnnotation]
	}
	annotations := obj.GetAnnotations()
	if creator == "" {
		delete(annotations, v1alpha1.CreatedByAnnotation)
	} else {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.CreatedByAnnotation] = creator
	}
	obj.SetAnnotations(annotations)
	return nil
}
