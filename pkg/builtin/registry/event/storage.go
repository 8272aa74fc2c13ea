package event

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"
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
	store, err := registry.NewStore(optsGetter, registry.Resource{
		Plural:   corev1.Resource("events"),
		Singular: corev1.Resource("event"),
		New:      func() runtime.Object { return &corev1.Event{} },
		NewList:  func() runtime.Object { return &corev1.EventList{} },
		Strategy: Strategy,
		AttrFunc: GetAttrs,
		TTL:      TTL,
	})
	if err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
