// Package storage gives a heaven's API server its storage: every resource of
// a heaven goes through k8s.io/apiserver's etcd3 store, unchanged, over one
// of two etcd v3 clients — a client bound to the heaven's git branch that
// calls the store directly (NewBranchClient: no network, no key prefix), or
// the etcd that holds ephemeral resources, shared by every heaven (under
// "/ephemeral/<heaven>/").
//
// The storage factory of k8s.io/apiserver would dial one connection per
// resource and heaven; the stores of a heaven share its clients.
package storage

import (
	"fmt"
	"path"

	clientv3k "go.etcd.io/etcd/client/v3/kubernetes"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	apistorage "k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/client-go/tools/cache"
)

// EphemeralPrefix is the key prefix of all heavens in the ephemeral etcd.
const EphemeralPrefix = "/ephemeral"

// Clients are the two etcd v3 clients of a heaven's stores.
type Clients struct {
	// Git reaches the heaven's objects: a client bound to its git branch
	// (NewBranchClient), or an etcd shared by every heaven.
	Git *clientv3k.Client
	// GitPrefix goes before every key on Git: empty for the heaven's
	// branch, "/primary/<heaven>" on a shared etcd.
	GitPrefix string
	// Ephemeral reaches the etcd of ephemeral resources, shared by every
	// heaven (under "/ephemeral/<heaven>").
	Ephemeral *clientv3k.Client
}

// CodecFunc returns the storage codec of a resource and the versioner that
// names the version it is stored in.
type CodecFunc func(gr schema.GroupResource, example runtime.Object) (runtime.Codec, runtime.GroupVersioner, error)

// Getter is one heaven's generic.RESTOptionsGetter.
type Getter struct {
	Heaven    string
	Clients   Clients
	Codec     CodecFunc
	Ephemeral func(schema.GroupResource) bool
	// GarbageCollection makes deletions honour their propagation policy
	// (the orphan and foregroundDeletion finalizers), as kube-apiserver
	// does for kube-controller-manager's garbage collector: for kubernetes
	// heavens. Without it an object is deleted at once, and its dependents
	// are left to whoever collects them by their owner references.
	GarbageCollection bool
}

var _ generic.RESTOptionsGetter = (*Getter)(nil)

// GetRESTOptions places resource group/resource of the heaven at key
// "<prefix>/<group or core>/<resource>/", so that on the git branch an object
// is the file "<group or core>/<resource>/<namespace>/<name>.json".
func (g *Getter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	codec, versioner, err := g.Codec(gr, example)
	if err != nil {
		return generic.RESTOptions{}, fmt.Errorf("storage codec of %s: %w", gr, err)
	}
	client, prefix := g.Clients.Git, g.Clients.GitPrefix
	if g.Ephemeral != nil && g.Ephemeral(gr) {
		client, prefix = g.Clients.Ephemeral, path.Join(EphemeralPrefix, g.Heaven)
	}
	return generic.RESTOptions{
		StorageConfig: &storagebackend.ConfigForResource{
			Config: storagebackend.Config{
				Type:               storagebackend.StorageTypeETCD3,
				Prefix:             prefix,
				Codec:              codec,
				EncodeVersioner:    versioner,
				LeaseManagerConfig: etcd3.NewDefaultLeaseManagerConfig(),
			},
			GroupResource: gr,
		},
		Decorator:               sharedClientStorage(client),
		EnableGarbageCollection: g.GarbageCollection,
		DeleteCollectionWorkers: 1,
		ResourcePrefix:          ResourcePrefix(gr),
	}, nil
}

// ResourcePrefix is where a heaven keeps the objects of gr, below its key
// prefix: "<group or core>/<resource>".
func ResourcePrefix(gr schema.GroupResource) string {
	group := gr.Group
	if group == "" {
		group = "core"
	}
	return group + "/" + gr.Resource
}

// sharedClientStorage builds an etcd3 store over an existing client, without
// a watch cache: both backends answer ranges from memory, and a cache per
// resource and heaven would cost more than it saves. Compaction is not the
// API server's job here (the git store's branches are compacted by
// heaven-server), so the store gets no compactor.
func sharedClientStorage(client *clientv3k.Client) generic.StorageDecorator {
	return func(config *storagebackend.ConfigForResource, resourcePrefix string,
		_ func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		_ apistorage.AttrFunc, _ apistorage.IndexerFuncs, _ *cache.Indexers,
	) (apistorage.Interface, factory.DestroyFunc, error) {
		versioner := apistorage.APIObjectVersioner{}
		s, err := etcd3.New(client, nil, config.Codec, newFunc, newListFunc, config.Prefix, resourcePrefix,
			config.GroupResource, identity.NewEncryptCheckTransformer(), config.LeaseManagerConfig,
			etcd3.NewDefaultDecoder(config.Codec, versioner), versioner)
		if err != nil {
			return nil, nil, err
		}
		return s, s.Close, nil
	}
}
