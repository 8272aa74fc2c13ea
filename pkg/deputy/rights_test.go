package deputy

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func TestRights(t *testing.T) {
	merge := &v1alpha1.AutomatedMerge{Spec: v1alpha1.AutomatedMergeSpec{Sources: []string{"a", "b"}, Target: "t", Resources: []string{"core/configmaps", "apps/deployments"}}}
	for _, tc := range []struct {
		name string
		got  []Right
		want []string
	}{
		{"no fork, no rights", HeavenRights(&v1alpha1.Heaven{}), nil},
		{"a fork reads its source", HeavenRights(&v1alpha1.Heaven{Spec: v1alpha1.HeavenSpec{Fork: &v1alpha1.Fork{Heaven: "src"}}}),
			[]string{"get every resource in heaven src", "list every resource in heaven src"}},
		{"a remote reads and writes its heaven", RemoteRights(&v1alpha1.Heaven{ObjectMeta: metav1.ObjectMeta{Name: "h"}, Spec: v1alpha1.HeavenSpec{Remote: &v1alpha1.Remote{URL: "x"}}}),
			[]string{"get every resource in heaven h", "list every resource in heaven h", "create every resource in heaven h",
				"update every resource in heaven h", "patch every resource in heaven h", "delete every resource in heaven h"}},
		{"a merge reads its resources in the sources and writes them in the target", MergeRights(merge), []string{
			"get configmaps in heaven a", "list configmaps in heaven a", "get deployments.apps in heaven a", "list deployments.apps in heaven a",
			"get configmaps in heaven b", "list configmaps in heaven b", "get deployments.apps in heaven b", "list deployments.apps in heaven b",
			"create configmaps in heaven t", "update configmaps in heaven t", "patch configmaps in heaven t", "delete configmaps in heaven t",
			"create deployments.apps in heaven t", "update deployments.apps in heaven t", "patch deployments.apps in heaven t", "delete deployments.apps in heaven t",
		}},
		{"a merge of every resource", MergeSourceRights(&v1alpha1.AutomatedMerge{}, "a"), []string{"get every resource in heaven a", "list every resource in heaven a"}},
		{"a sync target", SyncTargetRights(&v1alpha1.SyncTarget{Spec: v1alpha1.SyncTargetSpec{Heaven: "h"}}), []string{
			"get every resource in heaven h", "list every resource in heaven h", "watch every resource in heaven h",
			"update every resource in heaven h", "patch every resource in heaven h"}},
		{"a controller heaven forks, merges both ways and uses a sync target", ControllerHeavenRights(&v1alpha1.ControllerHeaven{
			ObjectMeta: metav1.ObjectMeta{Name: "ctrl"},
			Spec:       v1alpha1.ControllerHeavenSpec{Fork: "main", Resources: []string{"core/configmaps"}, SyncTarget: "phys"}}), []string{
			"get every resource in heaven main", "list every resource in heaven main",
			"create configmaps in heaven main", "update configmaps in heaven main", "patch configmaps in heaven main", "delete configmaps in heaven main",
			"get configmaps in heaven ctrl", "list configmaps in heaven ctrl",
			"create configmaps in heaven ctrl", "update configmaps in heaven ctrl", "patch configmaps in heaven ctrl", "delete configmaps in heaven ctrl",
			"update synctargets.heaven.dev in heaven root"}},
	} {
		var got []string
		for _, r := range tc.got {
			got = append(got, r.String())
		}
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestCheckNamesTheFirstMissingRight(t *testing.T) {
	alice := &user.DefaultInfo{Name: "alice"}
	asked := 0
	authorize := func(_ context.Context, heaven string, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked++
		assert.Equal(t, "alice", a.GetUser().GetName())
		assert.True(t, a.IsResourceRequest())
		if heaven == "team-b" && a.GetVerb() == "list" {
			return authorizer.DecisionNoOpinion, "no binding", nil
		}
		return authorizer.DecisionAllow, "", nil
	}
	rights := append(everything("team-a", "get", "list"), everything("team-b", "get", "list", "watch")...)
	err := Check(context.Background(), authorize, alice, rights)
	var missing *MissingRightError
	require.True(t, errors.As(err, &missing), "%v", err)
	assert.Equal(t, "list every resource in heaven team-b", missing.Right.String())
	assert.EqualError(t, err, `user "alice" may not list every resource in heaven team-b: no binding`)
	assert.Equal(t, 4, asked, "it stops at the first missing right")

	require.NoError(t, Check(context.Background(), authorize, alice, everything("team-a", "get")))
	failing := func(context.Context, string, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionNoOpinion, "", errors.New("heaven unreachable")
	}
	err = Check(context.Background(), failing, alice, everything("team-a", "get"))
	require.Error(t, err)
	assert.False(t, errors.As(err, &missing), "an error is no missing right")
}

func TestRequesterRoundTrip(t *testing.T) {
	obj := &metav1.ObjectMeta{Annotations: map[string]string{RequesterAnnotation: encodeRequester(&user.DefaultInfo{Name: "alice", UID: "1", Groups: []string{"dev"}})}}
	u, ok := Requester(obj)
	require.True(t, ok)
	assert.Equal(t, "alice", u.GetName())
	assert.Equal(t, []string{"dev"}, u.GetGroups())
	for _, raw := range []string{"", "{", `{"user":""}`} {
		_, ok := Requester(&metav1.ObjectMeta{Annotations: map[string]string{RequesterAnnotation: raw}})
		assert.False(t, ok, raw)
	}
	_, ok = Requester(&metav1.ObjectMeta{})
	assert.False(t, ok)
}
