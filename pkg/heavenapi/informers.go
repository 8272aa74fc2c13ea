package heavenapi

import (
	"context"
	"sync"

	"k8s.io/client-go/informers"
)

// informerFactory is client-go's SharedInformerFactory whose Start runs the
// informers under a cancelable context, ended when stopCh closes.
//
// k8s.io/apiserver starts a heaven's informers with Start(stopCh), and
// client-go turns stopCh into a context that is not one of package
// context's own: each context derived from it (two per informer's watch)
// then costs a goroutine that waits for stopCh, about 20 per running heaven.
// Derived from a cancelable context, they cost none.
type informerFactory struct {
	informers.SharedInformerFactory

	mu       sync.Mutex
	contexts map[<-chan struct{}]context.Context // one per stopCh seen
}

func newInformerFactory(f informers.SharedInformerFactory) *informerFactory {
	return &informerFactory{SharedInformerFactory: f, contexts: map[<-chan struct{}]context.Context{}}
}

// Start starts the informers not started yet, until stopCh closes.
func (f *informerFactory) Start(stopCh <-chan struct{}) {
	f.StartWithContext(f.contextFor(stopCh))
}

func (f *informerFactory) contextFor(stopCh <-chan struct{}) context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx, ok := f.contexts[stopCh]; ok {
		return ctx
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	f.contexts[stopCh] = ctx
	return ctx
}
