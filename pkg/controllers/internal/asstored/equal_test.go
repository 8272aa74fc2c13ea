package asstored

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func TestEqualAsStored(t *testing.T) {
	at := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	stored := &v1alpha1.HeavenStatus{Phase: v1alpha1.HeavenPhaseReady,
		Remote: &v1alpha1.RemoteStatus{LastFetchTime: &metav1.Time{Time: at}}}
	fresh := stored.DeepCopy()
	fresh.Remote.LastFetchTime = &metav1.Time{Time: at.Add(300 * time.Millisecond)}
	fresh.Conditions, fresh.Owners = []metav1.Condition{}, []string{}
	assert.True(t, Equal(stored, fresh), "times to the second, empty lists omitted")

	fresh.Remote.LastFetchTime = &metav1.Time{Time: at.Add(time.Second)}
	assert.False(t, Equal(stored, fresh))
	assert.False(t, Equal(stored, &v1alpha1.HeavenStatus{Phase: v1alpha1.HeavenPhaseFailed}))
	assert.False(t, Equal(func() {}, func() {}), "what does not marshal is never equal")
}
