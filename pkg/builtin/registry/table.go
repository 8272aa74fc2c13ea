package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/printers"
	printersinternal "k8s.io/kubernetes/pkg/printers/internalversion"
	printerstorage "k8s.io/kubernetes/pkg/printers/storage"
)

// TableConvertor gives built-in types the table columns kube-apiserver
// gives them (kubectl get: DATA and AGE for ConfigMaps, READY, UP-TO-DATE
// and AVAILABLE for Deployments, …), with kube-apiserver's own printers.
// Those print Kubernetes' internal types; the objects served here are the
// versioned ones, converted first with Kubernetes' own conversions.
func TableConvertor() rest.TableConvertor {
	return tableConvertor{upstream: printerstorage.TableConvertor{
		TableGenerator: printers.NewTableGenerator().With(printersinternal.AddHandlers),
	}}
}

type tableConvertor struct{ upstream rest.TableConvertor }

func (c tableConvertor) ConvertToTable(ctx context.Context, obj, tableOptions runtime.Object) (*metav1.Table, error) {
	internal, err := toInternal(obj)
	if err != nil {
		return nil, err
	}
	return c.upstream.ConvertToTable(ctx, internal, tableOptions)
}
