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
	return orDefault(obj, err, name, authorization.DefaultClusterRoles())
}

func (s clusterRolesWithDefaults) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := s.Storage.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := obj.(*rbac.ClusterRoleList)
	list.Items = withDefaults(list.Items, list.Continue, authorization.DefaultClusterRoles(), opts)
	return list, nil
}

type clusterRoleBindingsWithDefaults struct {
	*clusterrolebindingpolicybased.Storage
}

func (s clusterRoleBindingsWithDefaults) Get(ctx context.Context, name string, opts *metav1.GetOptions) (runtime.Object, error) {
	obj, err := s.Storage.Get(ctx, name, opts)
	return orDefault(obj, err, name, authorization.DefaultClusterRoleBindings())
}

func (s clusterRoleBindingsWithDefaults) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	obj, err := s.Storage.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	list := obj.(*rbac.ClusterRoleBindingList)
	list.Items = withDefaults(list.Items, list.Continue, authorization.DefaultClusterRoleBindings(), opts)
	return list, nil
}

// defaultObject is a default ClusterRole or ClusterRoleBinding.
type defaultObject[T any] interface {
	*T
	runtime.Object
	GetName() string
	GetLabels() map[string]string
	DeepCopy() *T
}

// orDefault answers a get of name that the store did not find with the
// default of that name.
func orDefault[T any, P defaultObject[T]](obj runtime.Object, err error, name string, defaults []P) (runtime.Object, error) {
	if apierrors.IsNotFound(err) {
		for _, d := range defaults {
			if d.GetName() == name {
				return P(d.DeepCopy()), nil
			}
		}
	}
	return obj, err
}

// withDefaults adds to the stored items of a list the defaults they do not
// replace and opts selects, on the last page (continued is empty).
func withDefaults[T any, P defaultObject[T]](items []T, continued string, defaults []P, opts *metainternalversion.ListOptions) []T {
	if continued != "" {
		return items
	}
	stored := map[string]bool{}
	for i := range items {
		stored[P(&items[i]).GetName()] = true
	}
	for _, d := range defaults {
		if !stored[d.GetName()] && selected(opts, d.GetName(), d.GetLabels()) {
			items = append(items, *d.DeepCopy())
		}
	}
	return items
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
