package deployment

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// REST is the deployments storage.
type REST struct{ *genericregistry.Store }

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
	_ rest.Patcher            = &StatusREST{}
)

// ShortNames lets kubectl accept "deploy".
func (*REST) ShortNames() []string { return []string{"deploy"} }

// Categories puts deployments in "kubectl get all".
func (*REST) Categories() []string { return []string{"all"} }

// Storage is the deployments resource and its subresources.
type Storage struct {
	Deployment *REST
	Status     *StatusREST
	Scale      *ScaleREST
}

// NewREST returns the deployments storage and its status and scale subresources.
func NewREST(optsGetter generic.RESTOptionsGetter) (*Storage, error) {
	resource := appsv1.Resource("deployments")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &appsv1.Deployment{} },
		NewListFunc:               func() runtime.Object { return &appsv1.DeploymentList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: appsv1.Resource("deployment"),
		CreateStrategy:            Strategy,
		UpdateStrategy:            Strategy,
		DeleteStrategy:            Strategy,
		ResetFieldsStrategy:       Strategy,
		TableConvertor:            registry.TableConvertor(),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	status := *store
	status.UpdateStrategy = StatusStrategy
	status.ResetFieldsStrategy = StatusStrategy
	return &Storage{Deployment: &REST{store}, Status: &StatusREST{&status}, Scale: &ScaleREST{store}}, nil
}

// StatusREST serves deployments/status.
type StatusREST struct{ store *genericregistry.Store }

func (r *StatusREST) New() runtime.Object { return &appsv1.Deployment{} }

// Destroy does nothing: the main resource owns the storage.
func (r *StatusREST) Destroy() {}

func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// Subresources never create.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
