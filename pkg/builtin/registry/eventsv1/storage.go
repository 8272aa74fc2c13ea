package eventsv1

import (
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// TTL is how long an event lives, kube-apiserver's default --event-ttl.
const TTL = time.Hour

// NewREST returns the events.k8s.io events storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	resource := eventsv1.Resource("events")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &eventsv1.Event{} },
		NewListFunc:               func() runtime.Object { return &eventsv1.EventList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: eventsv1.Resource("event"),
		TTLFunc:                   func(runtime.Object, uint64, bool) (uint64, error) { return uint64(TTL.Seconds()), nil },
		CreateStrategy:            Strategy,
		UpdateStrategy:            Strategy,
		DeleteStrategy:            Strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(resource),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return store, nil
}
