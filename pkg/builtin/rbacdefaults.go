package builtin

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kubernetes/pkg/apis/rbac"
	clusterrolepolicybased "k8s.io/kubernetes/pkg/registry/rbac/clusterrole/policybased"
	clusterrolebindingpolicybased "k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding/policybased"

	"github.com/heaven-dev/heaven/pkg/authorization"
)

// The default ClusterRoles and ClusterRoleBindings are served by every
// heaven without being stored (pkg/authorization). Gets and lists of the
// RBAC API show them where no stored object of the same name replaces
// them, so that `kubectl get clusterrole edit` answers as in any cluster;
// writing one stores it, and the stored object takes the default's place.
// Watches show stored objects only.

type clusterRolesWithDefaults struct {
	*clusterrolepolicybased.Storage
}

func (s clusterRolesWithDefaults) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.Storage.Get(ctx, name, opts)
	if apierrors.IsNotFound(err) {
		for _, d := range authorization.DefaultClusterRoles() {
			if d.Name == name {
				return d.DeepCopy(), nil
			}
		}
	}
	return obj, err
}

func (s clusterRolesWithDefaults) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := s.Storage.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := obj.(*rbac.ClusterRoleList)
	if list.Continue != "" {
		return list, nil // the defaults come with the last page
	}
	stored := map[string]bool{}
	for _, r := range list.Items {
		stored[r.Name] = true
	}
	for _, d := range authorization.DefaultClusterRoles() {
		if !stored[d.Name] && selected(opts, d.Name, d.Labels) {
			list.Items = append(list.Items, *d.DeepCopy())
		}
	}
	return list, nil
}

type clusterRoleBindingsWithDefaults struct {
	*clusterrolebindingpolicybased.Storage
}

func (s clusterRoleBindingsWithDefaults) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.Storage.Get(ctx, name, opts)
	if apierrors.IsNotFound(err) {
		for _, d := range authorization.DefaultClusterRoleBindings() {
			if d.Name == name {
				return d.DeepCopy(), nil
			}
		}
	}
	return obj, err
}

func (s clusterRoleBindingsWithDefaults) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := s.Storage.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := obj.(*rbac.ClusterRoleBindingList)
	if list.Continue != "" {
		return list, nil
	}
	stored := map[string]bool{}
	for _, b := range list.Items {
		stored[b.Name] = true
	}
	for _, d := range authorization.DefaultClusterRoleBindings() {
		if !stored[d.Name] && selected(opts, d.Name, d.Labels) {
			list.Items = append(list.Items, *d.DeepCopy())
		}
	}
	return list, nil
}

// selected says whether a list with opts shows an object of that name
// and labels.
func selected(opts *metainternalversion.ListOptions, name string, objLabels map[string]string) bool {
	if opts == nil {
		return true
	}
	if opts.LabelSelector != nil && !opts.LabelSelector.Matches(labels.Set(objLabels)) {
		return false
	}
	return opts.FieldSelector == nil || opts.FieldSelector.Matches(fields.Set{"metadata.name": name})
}
