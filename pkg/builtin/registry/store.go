package registry

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
)

// RESTStrategy is a strategy for create, update and delete.
type RESTStrategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
	rest.RESTDeleteStrategy
}

// Resource describes a resource served by a plain store: no subresources,
// one strategy for every verb.
type Resource struct {
	Plural, Singular schema.GroupResource
	New, NewList     func() runtime.Object
	Strategy         RESTStrategy
	AttrFunc         storage.AttrFunc
	// TTL, if set, is how long objects live after their last write.
	TTL time.Duration
}

// NewStore builds the resource's store over optsGetter.
func NewStore(optsGetter generic.RESTOptionsGetter, r Resource) (*genericregistry.Store, error) {
	store := &genericregistry.Store{
		NewFunc:                   r.New,
		NewListFunc:               r.NewList,
		DefaultQualifiedResource:  r.Plural,
		SingularQualifiedResource: r.Singular,
		CreateStrategy:            r.Strategy,
		UpdateStrategy:            r.Strategy,
		DeleteStrategy:            r.Strategy,
		TableConvertor:            TableConvertor(),
	}
	if r.TTL > 0 {
		seconds := uint64(r.TTL.Seconds())
		store.TTLFunc = func(runtime.Object, uint64, bool) (uint64, error) { return seconds, nil }
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: r.AttrFunc}); err != nil {
		return nil, err
	}
	return store, nil
}
