package registry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// The columns are kube-apiserver's, for objects and lists of every
// built-in type served.
func TestTableColumnsAreKubeAPIServers(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "x", Namespace: "default", CreationTimestamp: metav1.Now()}
	tests := []struct {
		name    string
		obj     runtime.Object
		columns []string
		cells   []any // the first cells of the first row
	}{
		{"configmaps", &corev1.ConfigMapList{Items: []corev1.ConfigMap{{ObjectMeta: meta, Data: map[string]string{"a": "1", "b": "2"}}}},
			[]string{"Name", "Data", "Age"}, []any{"x", int64(2)}},
		{"secret", &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": nil}},
			[]string{"Name", "Type", "Data", "Age"}, []any{"x", "Opaque", int64(1)}},
		{"namespaces", &corev1.NamespaceList{Items: []corev1.Namespace{{ObjectMeta: meta, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}}},
			[]string{"Name", "Status", "Age"}, []any{"x", "Active"}},
		{"serviceaccount", &corev1.ServiceAccount{ObjectMeta: meta}, []string{"Name", "Age"}, []any{"x"}},
		{"deployments", &appsv1.DeploymentList{Items: []appsv1.Deployment{{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3)},
			Status: appsv1.DeploymentStatus{ReadyReplicas: 1, UpdatedReplicas: 2, AvailableReplicas: 1}}}},
			[]string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"}, []any{"x", "1/3", int64(2), int64(1)}},
		{"lease", &coordinationv1.Lease{ObjectMeta: meta, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me")}},
			[]string{"Name", "Holder", "Age"}, []any{"x", "me"}},
		{"core event", &corev1.Event{ObjectMeta: meta, Type: "Normal", Reason: "Done"},
			[]string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}, nil},
		{"events.k8s.io event", &eventsv1.Event{ObjectMeta: meta, Type: "Normal", Reason: "Done"},
			[]string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := TableConvertor().ConvertToTable(context.Background(), tt.obj, nil)
			require.NoError(t, err)
			var names []string
			for _, c := range table.ColumnDefinitions {
				names = append(names, c.Name)
			}
			assert.Equal(t, tt.columns, names)
			require.Len(t, table.Rows, 1)
			for i, want := range tt.cells {
				assert.Equal(t, want, table.Rows[0].Cells[i], "cell %d", i)
			}
		})
	}
}
