package deputy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// PluginName is the plugin's name in the admission chain.
const PluginName = "HeavenDeputy"

// Plugin is the root heaven's admission plugin for Heavens, AutomatedMerges,
// SyncTargets and ControllerHeavens: it records the requester of each created object and of
// each change of its spec, and refuses the change unless the requester
// holds the rights the object will exercise.
type Plugin struct {
	*admission.Handler
	authorize Authorizer
	// exists says whether a heaven's branch exists: creating the Heaven of
	// an existing branch makes its creator an owner of what is there.
	exists func(ctx context.Context, heaven string) (bool, error)
}

var (
	_ admission.MutationInterface   = &Plugin{}
	_ admission.ValidationInterface = &Plugin{}
)

// New returns the plugin; authorize asks a heaven's authorizer.
func New(authorize Authorizer, exists func(ctx context.Context, heaven string) (bool, error)) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), authorize: authorize, exists: exists}
}

func governed(a admission.Attributes) bool {
	if a.GetSubresource() != "" {
		return false
	}
	switch a.GetResource().GroupResource() {
	case v1alpha1.HeavensResource.GroupResource(), v1alpha1.AutomatedMergesResource.GroupResource(), v1alpha1.SyncTargetsResource.GroupResource(),
		v1alpha1.ControllerHeavensResource.GroupResource():
		return true
	}
	return false
}

// specChanged says whether the request creates the object or changes its
// spec: what makes its requester the requesting user.
func specChanged(a admission.Attributes) bool {
	if a.GetOperation() == admission.Create {
		return true
	}
	obj, ok1 := a.GetObject().(*unstructured.Unstructured)
	old, ok2 := a.GetOldObject().(*unstructured.Unstructured)
	return !ok1 || !ok2 || !equality.Semantic.DeepEqual(obj.Object["spec"], old.Object["spec"])
}

// Admit records the requester, or keeps the one recorded.
func (p *Plugin) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !governed(a) {
		return nil
	}
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	value, keep := "", false
	if specChanged(a) {
		if u := a.GetUserInfo(); u != nil {
			value, keep = encodeRequester(u), true
		}
	} else if old, err := meta.Accessor(a.GetOldObject()); err == nil {
		value, keep = old.GetAnnotations()[RequesterAnnotation]
	}
	annotations := obj.GetAnnotations()
	if keep {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[RequesterAnnotation] = value
	} else {
		delete(annotations, RequesterAnnotation)
	}
	obj.SetAnnotations(annotations)
	return nil
}

// Validate refuses a new object or spec whose rights the requester lacks.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !governed(a) || !specChanged(a) || a.GetUserInfo() == nil {
		return nil
	}
	u, ok := a.GetObject().(*unstructured.Unstructured)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected object %T", a.GetObject()))
	}
	rights, err := p.rights(ctx, a, u)
	if err != nil {
		return admission.NewForbidden(a, err)
	}
	if err := Check(ctx, p.authorize, a.GetUserInfo(), rights); err != nil {
		return admission.NewForbidden(a, fmt.Errorf("%w, which this %s would do on their behalf", err, a.GetKind().Kind))
	}
	return nil
}

func (p *Plugin) rights(ctx context.Context, a admission.Attributes, u *unstructured.Unstructured) ([]Right, error) {
	switch a.GetResource().GroupResource() {
	case v1alpha1.HeavensResource.GroupResource():
		var h v1alpha1.Heaven
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &h); err != nil {
			return nil, err
		}
		rights := HeavenRights(&h)
		if a.GetOperation() == admission.Create {
			owned, err := p.existingBranchRights(ctx, h.Name)
			return append(rights, owned...), err
		}
		return append(rights, RemoteRights(&h)...), nil
	case v1alpha1.AutomatedMergesResource.GroupResource():
		var am v1alpha1.AutomatedMerge
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &am); err != nil {
			return nil, err
		}
		return MergeRights(&am), nil
	case v1alpha1.SyncTargetsResource.GroupResource():
		var st v1alpha1.SyncTarget
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
			return nil, err
		}
		return SyncTargetRights(&st), nil
	case v1alpha1.ControllerHeavensResource.GroupResource():
		var ch v1alpha1.ControllerHeaven
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ch); err != nil {
			return nil, err
		}
		owned, err := p.existingBranchRights(ctx, ch.Spec.HeavenName(ch.Name))
		return append(ControllerHeavenRights(&ch), owned...), err
	}
	return nil, nil
}

// existingBranchRights are the rights it takes to become an owner of
// heaven: none for a new heaven (its creator owns it), everything for one
// whose branch exists already (only who may do everything there).
func (p *Plugin) existingBranchRights(ctx context.Context, heaven string) ([]Right, error) {
	exists, err := p.exists(ctx, heaven)
	if err != nil || !exists {
		return nil, err
	}
	return everything(heaven, "*"), nil
}
