package builtin

import (
	"reflect"
	"sync"
	"unsafe"

	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"
)

// Each of Kubernetes' stores builds its own table printer with the
// columns of every built-in kind (printers/internalversion.AddHandlers),
// about 40 KB a store: in kube-apiserver that is paid once, here once per
// store of every running heaven. The printers hold no state, so the stores
// of all heavens share one, swapped in before the stores serve.

var sharedTables = sync.OnceValue(func() printerstorage.TableConvertor {
	return printerstorage.TableConvertor{TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers)}
})

var storeType = reflect.TypeFor[*genericregistry.Store]()

// shareTablePrinters gives every store of info that prints tables with
// Kubernetes' printers the shared printer.
func shareTablePrinters(info *genericapiserver.APIGroupInfo) {
	for _, resources := range info.VersionedResourcesStorageMap {
		for _, storage := range resources {
			for _, store := range registryStores(reflect.ValueOf(storage), 0) {
				if _, ok := store.TableConvertor.(printerstorage.TableConvertor); ok {
					store.TableConvertor = sharedTables()
				}
			}
		}
	}
}

// maxStoreDepth bounds how deep registryStores looks into a REST type.
const maxStoreDepth = 3

// registryStores finds the *genericregistry.Store values a REST storage
// is, embeds or holds in a field: Kubernetes' REST types embed one, and
// their status and other subresource types keep a copy of it in an
// unexported field (which would keep its printer alive). Fields are read,
// never written: the stores they point to are changed.
func registryStores(v reflect.Value, depth int) []*genericregistry.Store {
	if depth > maxStoreDepth || !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return registryStores(v.Elem(), depth)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if v.Type() == storeType {
			// Pointer, unlike Interface, also reads unexported fields.
			return []*genericregistry.Store{(*genericregistry.Store)(unsafe.Pointer(v.Pointer()))}
		}
		return registryStores(v.Elem(), depth)
	case reflect.Struct:
		var stores []*genericregistry.Store
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if f.Type == storeType || f.Anonymous {
				stores = append(stores, registryStores(v.Field(i), depth+1)...)
			}
		}
		return stores
	}
	return nil
}
