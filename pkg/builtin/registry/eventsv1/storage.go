package eventsv1

import (
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
)

// TTL is how long an event lives, kube-apiserver's default --event-ttl.
const TTL = time.Hour

// NewREST returns the events.k8s.io events storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*genericregistry.Store, error) {
	store, err := registry.NewStore(optsGetter, registry.Resource{
		Plural:   eventsv1.Resource("events"),
		Singular: eventsv1.Resource("event"),
		New:      func() runtime.Object { return &eventsv1.Event{} },
		NewList:  func() runtime.Object { return &eventsv1.EventList{} },
		Strategy: Strategy,
		AttrFunc: GetAttrs,
		TTL:      TTL,
	})
	if err != nil {
		return nil, err
	}
	return store, nil
}
