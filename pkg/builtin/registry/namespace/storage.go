package namespace

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// REST is the namespaces storage. It lists its verbs instead of embedding the
// store so that no path (deletecollection in particular) skips the
// two-phase Delete.
type REST struct {
	store *genericregistry.Store
}

var (
	_ rest.Getter             = &REST{}
	_ rest.Lister             = &REST{}
	_ rest.Watcher            = &REST{}
	_ rest.Creater            = &REST{}
	_ rest.Updater            = &REST{}
	_ rest.GracefulDeleter    = &REST{}
	_ rest.ShortNamesProvider = &REST{}
)

// NewREST returns the namespaces storage and its status and finalize subresources.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, *FinalizeREST, error) {
	resource := corev1.Resource("namespaces")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Namespace{} },
		NewListFunc:               func() runtime.Object { return &corev1.NamespaceList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: corev1.Resource("namespace"),
		CreateStrategy:            Strategy,
		UpdateStrategy:            Strategy,
		DeleteStrategy:            Strategy,
		ResetFieldsStrategy:       Strategy,
		ShouldDeleteDuringUpdate:  finalized,
		ReturnDeletedObject:       true,
		TableConvertor:            registry.TableConvertor(),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, nil, nil, err
	}
	status := *store
	status.UpdateStrategy = StatusStrategy
	status.ResetFieldsStrategy = StatusStrategy
	finalize := *store
	finalize.UpdateStrategy = FinalizeStrategy
	finalize.ResetFieldsStrategy = FinalizeStrategy
	return &REST{store}, &StatusREST{&status}, &FinalizeREST{&finalize}, nil
}

// finalized lets an update that empties the last finalizers of a
// terminating namespace delete it; the store checks metadata.finalizers.
func finalized(_ context.Context, _ string, obj, _ runtime.Object) bool {
	return len(obj.(*corev1.Namespace).Spec.Finalizers) == 0
}

func (r *REST) New() runtime.Object     { return r.store.New() }
func (r *REST) NewList() runtime.Object { return r.store.NewList() }
func (r *REST) Destroy()                { r.store.Destroy() }
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return r.store.GetSingularName() }
func (*REST) ShortNames() []string      { return []string{"ns"} }

func (r *REST) StorageVersion() runtime.GroupVersioner { return r.store.StorageVersion() }

func (r *REST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

func (r *REST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r *REST) List(ctx context.Context, options *metainternalversion.ListOptions) (runtime.Object, error) {
	return r.store.List(ctx, options)
}

func (r *REST) Watch(ctx context.Context, options *metainternalversion.ListOptions) (watch.Interface, error) {
	return r.store.Watch(ctx, options)
}

func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	return r.store.Create(ctx, obj, createValidation, options)
}

func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}

func (r *REST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
