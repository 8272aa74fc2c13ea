package storage

import (
	"errors"
	"path"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
)

// Ranges is the storage factory of a kubernetes heaven's node port
// allocator: k8s.io/kubernetes keeps the allocation bitmap through a storage
// factory, which dials etcd itself. The bitmap is derived from the heaven's
// Services (the repair loop rebuilds it), so it lives with the ephemeral
// resources, under the heaven's prefix of the ephemeral etcd, and not in git.
type Ranges struct {
	Heaven string
	// Endpoints of the ephemeral etcd.
	Endpoints []string
	Codec     CodecFunc
}

var _ serverstorage.StorageFactory = Ranges{}

// NewConfig returns the etcd configuration of group resource gr.
func (r Ranges) NewConfig(gr schema.GroupResource, example runtime.Object) (*storagebackend.ConfigForResource, error) {
	if len(r.Endpoints) == 0 {
		return nil, errors.New("no etcd holds the ranges of the heaven's allocators")
	}
	codec, versioner, err := r.Codec(gr, example)
	if err != nil {
		return nil, err
	}
	c := storagebackend.Config{
		Type:               storagebackend.StorageTypeETCD3,
		Prefix:             path.Join(EphemeralPrefix, r.Heaven),
		Transport:          storagebackend.TransportConfig{ServerList: r.Endpoints},
		Codec:              codec,
		EncodeVersioner:    versioner,
		LeaseManagerConfig: etcd3.NewDefaultLeaseManagerConfig(),
	}
	return c.ForResource(gr), nil
}

// ResourcePrefix is the key prefix of gr below the heaven's.
func (Ranges) ResourcePrefix(gr schema.GroupResource) string {
	return ResourcePrefix(gr)
}

// Configs is empty: the heaven's storage is not checked through it.
func (Ranges) Configs() []storagebackend.Config { return nil }

// Backends is empty, as Configs.
func (Ranges) Backends() []serverstorage.Backend { return nil }
