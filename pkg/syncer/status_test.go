package syncer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	heavenfake "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/fake"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
)

func eastTarget() *v1alpha1.SyncTarget {
	return &v1alpha1.SyncTarget{
		ObjectMeta: metav1.ObjectMeta{Name: "east", Generation: 3},
		Spec:       v1alpha1.SyncTargetSpec{Heaven: "team-a", Resources: []string{"configmaps"}},
	}
}

// statusFixture is a syncer whose root heaven is the generated fake
// clientset holding SyncTarget east.
func statusFixture(t *testing.T) (*Syncer, *heavenfake.Clientset) {
	t.Helper()
	root := heavenfake.NewSimpleClientset(eastTarget())
	return &Syncer{id: testID, targets: root.HeavenV1alpha1().SyncTargets()}, root
}

// verbs are the actions' verbs and subresources, "get" or "update status".
func verbs(actions []clienttesting.Action) []string {
	var out []string
	for _, a := range actions {
		v := a.GetVerb()
		if sub := a.GetSubresource(); sub != "" {
			v += " " + sub
		}
		out = append(out, v)
	}
	return out
}

// A syncer's credential may GET its SyncTarget and GET, PUT or PATCH its
// status in root (pkg/server/scope.go): the heartbeat is a GET then a PUT
// of the status subresource.
func TestHeartbeatUpdatesStatusSubresource(t *testing.T) {
	s, root := statusFixture(t)
	require.NoError(t, s.writeStatus(context.Background(), true))

	assert.Equal(t, []string{"get", "update status"}, verbs(root.Actions()))
	got, err := root.HeavenV1alpha1().SyncTargets().Get(context.Background(), "east", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, eastTarget().Spec, got.Spec, "spec untouched")
	require.NotNil(t, got.Status.LastSyncerHeartbeatTime)
	for _, typ := range []string{v1alpha1.SyncTargetSyncerHeartbeat, v1alpha1.SyncTargetResourcesSynced, v1alpha1.SyncTargetClusterReachable} {
		c := meta.FindStatusCondition(got.Status.Conditions, typ)
		require.NotNil(t, c, typ)
		assert.Equal(t, int64(3), c.ObservedGeneration, typ)
	}
	assert.Equal(t, metav1.ConditionUnknown, meta.FindStatusCondition(got.Status.Conditions, v1alpha1.SyncTargetResourcesSynced).Status,
		"types not resolved yet")
}

func TestUnchangedStatusIsNotWritten(t *testing.T) {
	s, root := statusFixture(t)
	require.NoError(t, s.writeStatus(context.Background(), true))
	root.ClearActions()

	require.NoError(t, s.writeStatus(context.Background(), false))
	assert.Equal(t, []string{"get"}, verbs(root.Actions()))
}

func TestWantedResourcesAddTheSyncTargetsValidOnes(t *testing.T) {
	target := eastTarget()
	target.Spec.Resources = []string{"configmaps", "deployments.apps", "Not_A_Resource"}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	require.NoError(t, indexer.Add(target))
	s := &Syncer{id: testID, targetLister: heavenlisters.NewSyncTargetLister(indexer),
		cfg: CompletedConfig{&completedConfig{&Config{Resources: []schema.GroupResource{{Resource: "secrets"}, {Resource: "configmaps"}}}}}}

	wanted, invalid := s.wantedResources()
	assert.Equal(t, []schema.GroupResource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}, {Resource: "secrets"}}, wanted)
	assert.Contains(t, invalid, "Not_A_Resource")
	assert.Len(t, invalid, 1)
}
