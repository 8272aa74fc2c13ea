package syncer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// syncFixture is one reconciliation of configmap demo/cm against fake
// clients of both sides, which log every request in order.
type syncFixture struct {
	o        *objectSync
	requests []string // "up update", "down get", "down patch", ...
}

func newSyncFixture(t *testing.T, up *unstructured.Unstructured, down ...runtime.Object) *syncFixture {
	t.Helper()
	f := &syncFixture{}
	listKinds := map[schema.GroupVersionResource]string{configMapsGVR: "ConfigMapList"}
	upClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, up)
	downClient := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, down...)
	// The fake cannot apply: answer with the object sent.
	downClient.PrependReactor("patch", "configmaps", func(a clienttesting.Action) (bool, runtime.Object, error) {
		obj := &unstructured.Unstructured{}
		err := obj.UnmarshalJSON(a.(clienttesting.PatchAction).GetPatch())
		return true, obj, err
	})
	// Prepended last, so it sees every request first.
	for side, c := range map[string]*dynamicfake.FakeDynamicClient{"up": upClient, "down": downClient} {
		c.PrependReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
			f.requests = append(f.requests, side+" "+a.GetVerb())
			return false, nil, nil
		})
	}

	s := &Syncer{id: testID}
	loc := testID.locator("demo")
	s.namespaces = cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.Namespace{}, 0, cache.Indexers{})
	require.NoError(t, s.namespaces.GetStore().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: loc.Name(), Labels: testID.ownerLabels(), Annotations: map[string]string{NamespaceLocatorAnnotation: string(loc.json())},
	}}))
	f.o = &objectSync{
		s: s, t: &syncedType{}, key: objectKey{gr: configMapsGVR.GroupResource(), namespace: "demo", name: "cm"},
		up: up.DeepCopy(), downNS: loc.Name(),
		upClient:   upClient.Resource(configMapsGVR).Namespace("demo"),
		downClient: downClient.Resource(configMapsGVR).Namespace(loc.Name()),
	}
	return f
}

func (f *syncFixture) log() []string { return f.requests }

func configMap(namespace string, labels map[string]string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": namespace, "uid": "up-uid"},
		"data":     map[string]any{"k": "v"},
	}}
	u.SetLabels(labels)
	u.SetFinalizers(finalizers)
	return u
}

func selectedConfigMap(finalizers ...string) *unstructured.Unstructured {
	return configMap("demo", map[string]string{"heaven.dev/cluster": testID.target}, finalizers...)
}

func TestSyncHoldsTheFinalizerBeforeCreatingTheCopy(t *testing.T) {
	f := newSyncFixture(t, selectedConfigMap())
	require.NoError(t, f.o.sync(context.Background()))

	assert.Equal(t, []string{"up update", "down get", "down patch"}, f.log())
	assert.True(t, testID.hasFinalizer(f.o.up))
	assert.True(t, testID.owns(f.o.down))
	assert.Equal(t, f.o.downNS, f.o.down.GetNamespace())
}

func TestSyncNeverTouchesAnObjectItDidNotCreate(t *testing.T) {
	squatter := configMap(testID.locator("demo").Name(), map[string]string{"owner": "someone"})
	f := newSyncFixture(t, selectedConfigMap(testID.finalizer()), squatter)
	err := f.o.sync(context.Background())

	var notOwned *notOwnedError
	require.ErrorAs(t, err, &notOwned)
	assert.Equal(t, []string{"down get"}, f.log())
}

func TestSyncAdoptsItsOwnCopyTheCacheLacks(t *testing.T) {
	up := selectedConfigMap(testID.finalizer())
	f := newSyncFixture(t, up, downstreamObject(testID, up, testID.locator("demo").Name()))
	require.NoError(t, f.o.sync(context.Background()))

	assert.Equal(t, []string{"down get"}, f.log(), "an up-to-date copy is not applied again")
	require.NotNil(t, f.o.down)
}

func TestSyncWritesNothingDownWhenTheFinalizerCannotBeAdded(t *testing.T) {
	f := newSyncFixture(t, selectedConfigMap())
	f.o.upClient = dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()).Resource(configMapsGVR).Namespace("demo") // no such object: the update fails
	require.Error(t, f.o.sync(context.Background()))

	assert.NotContains(t, f.log(), "down patch")
	assert.Nil(t, f.o.down)
}
