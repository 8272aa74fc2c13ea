package reconcileloop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// calls counts reconciles per key; fail makes a key fail its first n calls.
type calls struct {
	mu    sync.Mutex
	n     map[string]int
	fail  map[string]int
	after map[string]time.Duration
}

func (c *calls) reconcile(_ context.Context, key string) (time.Duration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
	if c.n[key] <= c.fail[key] {
		return 0, errors.New("not yet")
	}
	if c.n[key] < 3 {
		return c.after[key], nil
	}
	return 0, nil
}

func (c *calls) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

func TestLoop(t *testing.T) {
	tests := []struct {
		name  string
		fail  int
		after time.Duration
		want  int // reconciles of the key, once settled
	}{
		{name: "success is reconciled once", want: 1},
		{name: "errors retry until success", fail: 2, want: 3},
		{name: "after looks again", after: time.Millisecond, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &calls{n: map[string]int{}, fail: map[string]int{"k": tt.fail}, after: map[string]time.Duration{"k": tt.after}}
			l := New(Options{Name: "test", KeyName: "key", RateLimiter: Backoff(time.Millisecond, 10*time.Millisecond)}, c.reconcile)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				l.Run(ctx, 2)
			}()
			l.Add("k")
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				assert.Equal(ct, tt.want, c.count("k"))
			}, 10*time.Second, 5*time.Millisecond)
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
			assert.Equal(t, tt.want, c.count("k"), "nothing more after settling")
		})
	}
}

func TestRunWaitsForCaches(t *testing.T) {
	c := &calls{n: map[string]int{}}
	l := New(Options{Name: "test"}, c.reconcile)
	l.Add("k")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	l.Run(ctx, 1, func() bool { return false })
	assert.Zero(t, c.count("k"), "no reconcile before the caches sync")
}

func TestEnqueueNamesObjectsAndTombstones(t *testing.T) {
	c := &calls{n: map[string]int{}}
	l := New(Options{Name: "test"}, c.reconcile)
	l.Enqueue(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	l.Enqueue(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}})
	l.Enqueue(cache.DeletedFinalStateUnknown{Key: "ns/c"})
	var keys []string
	for l.queue.Len() > 0 {
		k, _ := l.queue.Get()
		keys = append(keys, k)
		l.queue.Done(k)
	}
	assert.ElementsMatch(t, []string{"ns/a", "b", "ns/c"}, keys)
}

// Objects read through typed clients carry no kind; their events still name
// them, heaven.dev's as well as Kubernetes'.
func TestBurstyEventsNameTypedObjects(t *testing.T) {
	b, recorder := BurstyEvents(nil, "test")
	defer b.Shutdown()
	got := make(chan *corev1.Event, 2)
	w := b.StartEventWatcher(func(e *corev1.Event) { got <- e })
	defer w.Stop()

	recorder.Event(&v1alpha1.Heaven{ObjectMeta: metav1.ObjectMeta{Name: "team", UID: "u1"}}, corev1.EventTypeNormal, "Merged", "merged")
	recorder.Event(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}, corev1.EventTypeNormal, "Seen", "seen")
	var refs []corev1.ObjectReference
	for range 2 {
		select {
		case e := <-got:
			refs = append(refs, e.InvolvedObject)
		case <-time.After(10 * time.Second):
			t.Fatal("no event recorded")
		}
	}
	assert.ElementsMatch(t, []string{"heaven.dev/v1alpha1 Heaven team", "v1 ConfigMap cm"},
		[]string{refs[0].APIVersion + " " + refs[0].Kind + " " + refs[0].Name, refs[1].APIVersion + " " + refs[1].Kind + " " + refs[1].Name})
}
