package builtin

import (
	"testing"

	"github.com/stretchr/testify/assert"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"
)

// restLike has the shapes of Kubernetes' REST types: a store embedded by
// pointer, possibly behind an embedded interface (RBAC's policybased
// storages), next to other fields.
type restLike struct {
	*genericregistry.Store
	other *genericregistry.Store
}

type wrapped struct {
	rest.Storage
	name string
}

func TestShareTablePrinters(t *testing.T) {
	own := func() *genericregistry.Store {
		return &genericregistry.Store{TableConvertor: printerstorage.TableConvertor{TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers)}}
	}
	defaultTables := rest.NewDefaultTableConvertor(genericregistry.Store{}.DefaultQualifiedResource)
	embedded, behindInterface, unexported := own(), own(), own()
	plain := &genericregistry.Store{TableConvertor: defaultTables}
	info := &genericapiserver.APIGroupInfo{VersionedResourcesStorageMap: map[string]map[string]rest.Storage{"v1": {
		"embedded":        &restLike{Store: embedded},
		"behindInterface": wrapped{Storage: &restLike{Store: behindInterface}},
		"unexported":      &restLike{other: unexported},
		"plain":           plain,
	}}}
	shareTablePrinters(info)

	shared := sharedTables()
	for name, s := range map[string]*genericregistry.Store{"embedded": embedded, "behindInterface": behindInterface} {
		assert.Same(t, shared.TableGenerator, s.TableConvertor.(printerstorage.TableConvertor).TableGenerator, "%s: the shared printer", name)
	}
	assert.Same(t, shared.TableGenerator, unexported.TableConvertor.(printerstorage.TableConvertor).TableGenerator,
		"a store in an unexported field (a status subresource's copy)")
	assert.Equal(t, defaultTables, plain.TableConvertor, "a store without Kubernetes' printers keeps its own")
}
