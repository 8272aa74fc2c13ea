package heavenapi

import (
	"context"

	"k8s.io/client-go/informers"
)

// informerFactory is client-go's SharedInformerFactory whose Start runs the
// informers under a cancelable context, ended when stopCh closes.
//
// k8s.io/apiserver starts a heaven's informers once, with Start(stopCh),
// and client-go turns stopCh into a context that is not one of package
// context's own: each context derived from it (two per informer's watch)
// then costs a goroutine that waits for stopCh, about 20 per running heaven.
// Derived from a cancelable context, they cost none; the context costs one.
type informerFactory struct {
	informers.SharedInformerFactory
}

// Start starts the informers not started yet, until stopCh closes.
func (f informerFactory) Start(stopCh <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-stopCh
		cancel()
	}()
	f.StartWithContext(ctx)
}
