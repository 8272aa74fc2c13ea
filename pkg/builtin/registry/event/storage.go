package event

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// TTL is how long an event lives, kube-apiserver's default --event-ttl.
const TTL = time.Hour

// REST is the core events storage.
type REST struct{ *genericregistry.Store }

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets kubectl accept "ev".
func (*REST) ShortNames() []string { return []string{"ev"} }

// NewREST returns the core events storage.
func NewREST(optsGetter generic.RESTOptionsGetter) (*REST, error) {
	resource := corev1.Resource("events")
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1.Event{} },
		NewListFunc:               func() runtime.Object { return &corev1.EventList{} },
		DefaultQualifiedResource:  resource,
		SingularQualifiedResource: corev1.Resource("event"),
		TTLFunc:                   ttl,
		CreateStrategy:            Strategy,
		UpdateStrategy:            Strategy,
		DeleteStrategy:            Strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(resource),
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}

func ttl(runtime.Object, uint64, bool) (uint64, error) { return uint64(TTL.Seconds()), nil }
