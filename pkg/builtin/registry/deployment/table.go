package deployment

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// tableConvertor prints the columns "kubectl get deployments" shows.
type tableConvertor struct{}

var columns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name of the deployment"},
	{Name: "Ready", Type: "string", Description: "Ready replicas out of desired"},
	{Name: "Up-to-date", Type: "integer", Description: "Replicas at the current template"},
	{Name: "Available", Type: "integer", Description: "Replicas available to users"},
	{Name: "Age", Type: "string", Description: "Time since creation"},
}

func (tableConvertor) ConvertToTable(_ context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opts, ok := tableOptions.(*metav1.TableOptions); !ok || !opts.NoHeaders {
		table.ColumnDefinitions = columns
	}
	var items []appsv1.Deployment
	switch t := obj.(type) {
	case *appsv1.Deployment:
		items = []appsv1.Deployment{*t}
	case *appsv1.DeploymentList:
		items = t.Items
		table.ResourceVersion, table.Continue, table.RemainingItemCount = t.ResourceVersion, t.Continue, t.RemainingItemCount
	default:
		return nil, fmt.Errorf("cannot print %T as a deployment table", obj)
	}
	for i := range items {
		d := &items[i]
		var desired int32
		if d.Spec.Replicas != nil {
			desired = *d.Spec.Replicas
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []interface{}{
				d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, desired),
				int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas),
				duration.HumanDuration(time.Since(d.CreationTimestamp.Time)),
			},
			Object: runtime.RawExtension{Object: d},
		})
	}
	if m, err := meta.ListAccessor(obj); err == nil && table.ResourceVersion == "" {
		table.ResourceVersion = m.GetResourceVersion()
	}
	return table, nil
}
