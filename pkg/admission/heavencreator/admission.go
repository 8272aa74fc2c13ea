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

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// PluginName is the plugin's name in the admission chain.
const PluginName = "HeavenCreator"

// Plugin records and protects heaven.dev/created-by.
type Plugin struct{ *admission.Handler }

var _ admission.MutationInterface = &Plugin{}

// New returns the plugin.
func New() *Plugin { return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)} }

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
