package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// mergeWidgetCRD is a widget whose controller reports the size it saw.
const mergeWidgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
          status:
            type: object
            properties:
              observedSize: {type: integer}
`

var (
	widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	mergesGVR  = v1alpha1.AutomatedMergesResource
)

// TestAutomatedMergesWorkspacePerController is the workspace-per-controller
// setup in one server: a user edits spec in heaven main, a controller
// writes status in its own heaven ctrl (a fork of main), and two
// AutomatedMerges merge each way: spec from main, status from ctrl.
func TestAutomatedMergesWorkspacePerController(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	ctx := t.Context()
	root := ts.Dynamic("root")

	ts.Kubectl(t, "main", mergeWidgetCRD, "apply", "-f", "-")
	waitServed(t, ts, "main")
	mainW := ts.Dynamic("main").Resource(widgetsGVR).Namespace("default")
	_, err := mainW.Create(ctx, widgetObject(1), metav1.CreateOptions{})
	require.NoError(t, err)
	ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"ctrl"},"spec":{"fork":{"heaven":"main"}}}`, "apply", "-f", "-")
	waitHeavenReady(t, ts, "ctrl")
	ts.Kubectl(t, "ctrl", mergeWidgetCRD, "apply", "-f", "-")
	waitServed(t, ts, "ctrl")
	ctrlW := ts.Dynamic("ctrl").Resource(widgetsGVR).Namespace("default")

	// Spec from main, status from ctrl.
	createMerge(t, root, "main-to-ctrl", "main", "ctrl", "PreferSource", "PreferTarget")
	createMerge(t, root, "ctrl-to-main", "ctrl", "main", "PreferTarget", "PreferSource")
	go runWidgetController(ctx, ctrlW)

	t.Run("converge", func(t *testing.T) {
		patchSpec(t, mainW, 2)
		waitConverged(t, mainW, ctrlW, 2, 2)
		// Every resource merges: a ConfigMap made in ctrl reaches main.
		_, err := ts.Kube("ctrl").CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "from-ctrl"}, Data: map[string]string{"a": "b"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cm, err := ts.Kube("main").CoreV1().ConfigMaps("default").Get(ctx, "from-ctrl", metav1.GetOptions{})
			require.NoError(c, err)
			assert.Equal(c, "b", cm.Data["a"])
		}, 10*time.Second, tick, "configmap from ctrl in main")
		// The controller writes status just after the merge commit.
		for _, name := range []string{"main-to-ctrl", "ctrl-to-main"} {
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				am := getMerge(c, root, name)
				src, _, _ := unstructured.NestedSlice(am.Object, "status", "sources")
				require.Len(c, src, 1, "sources in status")
				s, _ := src[0].(map[string]any)
				assert.Len(c, s["sourceCommit"], 40, "sourceCommit")
				assert.Len(c, s["targetCommit"], 40, "targetCommit")
				assert.Equal(c, "True", condition(am, v1alpha1.ConditionReady), "Ready")
			}, 10*time.Second, tick, name+" status names both commits")
		}
	})

	t.Run("no ping-pong", func(t *testing.T) {
		heads := func(t require.TestingT) map[string]string {
			out := strings.Fields(ts.Git(t, "rev-parse", "main", "ctrl"))
			require.Len(t, out, 2)
			return map[string]string{"main": out[0], "ctrl": out[1]}
		}
		// Settled: the last merge, in one direction or the other, had both
		// heads as they are (git reads the ref files, which the store moves
		// just after a commit is acknowledged).
		var settled map[string]string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			settled = heads(c)
			matches := 0
			for _, name := range []string{"main-to-ctrl", "ctrl-to-main"} {
				am := getMerge(c, root, name)
				src, _, _ := unstructured.NestedSlice(am.Object, "status", "sources")
				require.Len(c, src, 1, "sources in status")
				s, _ := src[0].(map[string]any)
				source, _ := s["heaven"].(string)
				target, _, _ := unstructured.NestedString(am.Object, "spec", "target")
				if s["sourceCommit"] == settled[source] && s["targetCommit"] == settled[target] {
					matches++
				}
			}
			assert.Positive(c, matches, "a merge whose last commits are the heads %v", settled)
		}, 10*time.Second, tick, "merges settled")
		// Then nothing moves: a real 3s of quiet, polled.
		quiet := time.NewTicker(200 * time.Millisecond)
		defer quiet.Stop()
		for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); <-quiet.C {
			require.Equal(t, settled, heads(t), "a branch moved although nothing changed")
		}
	})

	t.Run("merge commits have two parents", func(t *testing.T) {
		for _, branch := range []string{"main", "ctrl"} {
			merges := 0
			for _, line := range strings.Split(strings.TrimSpace(ts.Git(t, "log", "--format=%P", branch)), "\n") {
				if len(strings.Fields(line)) == 2 {
					merges++
				}
			}
			assert.Positive(t, merges, "merge commits on %s", branch)
		}
		assert.Contains(t, ts.Git(t, "log", "--merges", "--format=%s", "main"), "merge heaven ctrl")
	})

	t.Run("conflict resolved by policy", func(t *testing.T) {
		setSuspend(t, root, "main-to-ctrl", true)
		setSuspend(t, root, "ctrl-to-main", true)
		// Both sides edit the same field; main also takes a stray status.
		patchSpec(t, mainW, 10)
		patchStatus(t, mainW, 99)
		patchSpec(t, ctrlW, 20)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			w, err := ctrlW.Get(ctx, "w1", metav1.GetOptions{})
			require.NoError(c, err)
			assert.EqualValues(c, 20, observed(w), "status.observedSize")
		}, 10*time.Second, tick, "ctrl's controller saw size 20")

		// main into ctrl: .spec from main (PreferSource), .status stays
		// ctrl's (the .status rule: PreferTarget).
		setSuspend(t, root, "main-to-ctrl", false)
		var conflicts []any
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			am := getMerge(c, root, "main-to-ctrl")
			conflicts, _, _ = unstructured.NestedSlice(am.Object, "status", "conflicts")
			assert.Len(c, conflicts, 2, "status.conflicts")
			assert.Equal(c, "True", condition(am, v1alpha1.ConditionConflicted), "Conflicted")
		}, 10*time.Second, tick, "main-to-ctrl reports its conflicts")
		byPath := map[string]map[string]any{}
		for _, c := range conflicts {
			m := c.(map[string]any)
			byPath[m["path"].(string)] = m
			assert.Equal(t, "example.com/widgets/default/w1", m["object"])
			assert.Equal(t, "main", m["heaven"])
		}
		require.Contains(t, byPath, ".spec.size")
		assert.Equal(t, map[string]any{"heaven": "main", "object": "example.com/widgets/default/w1", "path": ".spec.size",
			"base": "2", "target": "20", "source": "10", "resolution": "PreferSource"}, byPath[".spec.size"])
		require.Contains(t, byPath, ".status.observedSize")
		assert.Equal(t, "PreferTarget", byPath[".status.observedSize"]["resolution"])
		assert.Equal(t, "99", byPath[".status.observedSize"]["source"])

		setSuspend(t, root, "ctrl-to-main", false)
		waitConverged(t, mainW, ctrlW, 10, 10)

		require.EventuallyWithT(t, func(c *assert.CollectT) {
			events := mergeEvents(c, ts, "main-to-ctrl", "MergeConflict")
			assert.True(c, slices.ContainsFunc(events, func(e corev1.Event) bool {
				return e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, ".spec.size") && strings.Contains(e.Message, "PreferSource")
			}), "a Warning naming .spec.size and PreferSource among %d MergeConflict Events", len(events))
		}, 10*time.Second, tick, "conflict events")
		assert.NotEmpty(t, mergeEvents(t, ts, "ctrl-to-main", "Merged"), "an Event for each merge")
	})

	t.Run("manual leaves the target untouched", func(t *testing.T) {
		ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"review"},"spec":{"fork":{"heaven":"main"}}}`, "apply", "-f", "-")
		waitHeavenReady(t, ts, "review")
		reviewW := ts.Dynamic("review").Resource(widgetsGVR).Namespace("default")
		waitServed(t, ts, "review")
		patchSpec(t, reviewW, 40)
		patchSpec(t, mainW, 30)
		var reviewHead string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			reviewHead = strings.TrimSpace(ts.Git(c, "rev-parse", "review"))
			assert.Contains(c, ts.Git(c, "show", reviewHead+":example.com/widgets/default/w1.json"), `"size": 40`)
		}, 10*time.Second, tick, "git sees review's edit")

		createMerge(t, root, "main-to-review", "main", "review", "Manual", "", "example.com/widgets")
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			am := getMerge(c, root, "main-to-review")
			assert.Equal(c, "True", condition(am, v1alpha1.ConditionConflicted), "Conflicted")
			assert.Equal(c, "False", condition(am, v1alpha1.ConditionReady), "Ready")
		}, 10*time.Second, tick, "main-to-review blocked")
		am := getMerge(t, root, "main-to-review")
		conflicts, _, _ := unstructured.NestedSlice(am.Object, "status", "conflicts")
		require.Len(t, conflicts, 1)
		c := conflicts[0].(map[string]any)
		assert.Equal(t, ".spec.size", c["path"])
		assert.Equal(t, "Manual", c["resolution"])
		assert.Equal(t, "40", c["target"])
		assert.Equal(t, "30", c["source"])
		w, err := reviewW.Get(ctx, "w1", metav1.GetOptions{})
		require.NoError(t, err)
		size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
		assert.Equal(t, int64(40), size, "the target is untouched")
		assert.Equal(t, reviewHead, strings.TrimSpace(ts.Git(t, "rev-parse", "review")), "no commit on the target")

		// Resolving it in the target unblocks the merge.
		patchSpec(t, reviewW, 30)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			am := getMerge(c, root, "main-to-review")
			assert.Equal(c, "True", condition(am, v1alpha1.ConditionReady), "Ready")
			assert.Equal(c, "False", condition(am, v1alpha1.ConditionConflicted), "Conflicted")
		}, 10*time.Second, tick, "main-to-review merged")
	})
}

// mergeEvents are the Events of an AutomatedMerge with a reason (in the
// root heaven's default namespace, as for every cluster-scoped object).
func mergeEvents(t require.TestingT, ts *framework.HeavenServer, name, reason string) []corev1.Event {
	events, err := ts.Kube("root").CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	var out []corev1.Event
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == v1alpha1.AutomatedMergeKind && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func waitServed(t *testing.T, ts *framework.HeavenServer, heaven string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := ts.Dynamic(heaven).Resource(widgetsGVR).Namespace("default").List(t.Context(), metav1.ListOptions{})
		assert.NoError(c, err)
	}, 30*time.Second, tick, "widgets served in "+heaven)
}

func widgetObject(size int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "namespace": "default"},
		"spec":     map[string]any{"size": size},
	}}
}

// createMerge creates an AutomatedMerge of resources (every resource if
// none) with a default resolution and, if given, a rule for .status.
func createMerge(t *testing.T, root dynamic.Interface, name, source, target, def, statusRule string, resources ...any) {
	t.Helper()
	policy := map[string]any{"default": def}
	if statusRule != "" {
		policy["rules"] = []any{map[string]any{"path": ".status", "resolution": statusRule}}
	}
	am := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "heaven.dev/v1alpha1", "kind": "AutomatedMerge",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"sources": []any{source}, "target": target,
			"conflictPolicy": policy,
		},
	}}
	if len(resources) > 0 {
		am.Object["spec"].(map[string]any)["resources"] = resources
	}
	_, err := root.Resource(mergesGVR).Create(context.Background(), am, metav1.CreateOptions{})
	require.NoError(t, err)
}

func getMerge(t require.TestingT, root dynamic.Interface, name string) *unstructured.Unstructured {
	am, err := root.Resource(mergesGVR).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return am
}

func condition(u *unstructured.Unstructured, typ string) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// setSuspend suspends or resumes a merge and waits until the controller
// has acted on it.
func setSuspend(t *testing.T, root dynamic.Interface, name string, suspend bool) {
	t.Helper()
	am, err := root.Resource(mergesGVR).Patch(context.Background(), name, types.MergePatchType,
		[]byte(fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend)), metav1.PatchOptions{})
	require.NoError(t, err)
	gen := am.GetGeneration()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		am := getMerge(c, root, name)
		observedGen, _, _ := unstructured.NestedInt64(am.Object, "status", "observedGeneration")
		assert.GreaterOrEqual(c, observedGen, gen, "status.observedGeneration")
	}, 10*time.Second, tick, "%s suspend=%t observed", name, suspend)
}

func patchSpec(t *testing.T, w dynamic.ResourceInterface, size int) {
	t.Helper()
	_, err := w.Patch(context.Background(), "w1", types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"size":%d}}`, size)), metav1.PatchOptions{})
	require.NoError(t, err)
}

func patchStatus(t *testing.T, w dynamic.ResourceInterface, observedSize int) {
	t.Helper()
	_, err := w.Patch(context.Background(), "w1", types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"observedSize":%d}}`, observedSize)),
		metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}

func observed(w *unstructured.Unstructured) int64 {
	v, _, _ := unstructured.NestedInt64(w.Object, "status", "observedSize")
	return v
}

// runWidgetController is the controller that works in heaven ctrl: it
// reports each widget's spec.size as status.observedSize.
func runWidgetController(ctx context.Context, widgets dynamic.ResourceInterface) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		list, err := widgets.List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range list.Items {
			w := &list.Items[i]
			size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
			if observed(w) == size {
				continue
			}
			_ = unstructured.SetNestedField(w.Object, size, "status", "observedSize")
			_, _ = widgets.UpdateStatus(ctx, w, metav1.UpdateOptions{})
		}
	}
}

// waitConverged waits until w1 has the same spec and status in both
// heavens, with the values given.
func waitConverged(t *testing.T, a, b dynamic.ResourceInterface, size, observedSize int64) {
	t.Helper()
	start := time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, w := range []dynamic.ResourceInterface{a, b} {
			obj, err := w.Get(t.Context(), "w1", metav1.GetOptions{})
			require.NoError(c, err)
			s, _, _ := unstructured.NestedInt64(obj.Object, "spec", "size")
			assert.Equal(c, size, s, "spec.size")
			assert.Equal(c, observedSize, observed(obj), "status.observedSize")
		}
	}, 10*time.Second, tick, "both heavens at size %d, observed %d", size, observedSize)
	t.Logf("converged in %s", time.Since(start).Round(time.Millisecond))
}

// TestAutomatedMergeIntoStoppedHeaven: merges go through the branches, so
// heavens whose API servers stopped for being idle are merged without being
// started; the target serves the merged objects when it starts again.
func TestAutomatedMergeIntoStoppedHeaven(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.IdleTimeout = 500 * time.Millisecond })
	ctx := t.Context()
	ts.Kubectl(t, "src", "", "create", "configmap", "before")
	ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"dst"},"spec":{"fork":{"heaven":"src"}}}`, "apply", "-f", "-")
	waitHeavenReady(t, ts, "dst")
	ts.Kubectl(t, "src", "", "create", "configmap", "after", "--from-literal=a=b")
	onlyRoot := func(t require.TestingT) {
		assert.Equal(t, "1", scrapeMetric(t, ts, "heaven_active_heavens"), "heaven_active_heavens")
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) { onlyRoot(c) }, 30*time.Second, tick, "src and dst stopped")

	createMerge(t, ts.Dynamic("root"), "src-to-dst", "src", "dst", "PreferSource", "")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Contains(c, ts.Git(c, "ls-tree", "-r", "--name-only", "dst"), "core/configmaps/default/after.json")
	}, 10*time.Second, tick, "merged into dst's branch")
	onlyRoot(t) // neither heaven was started for the merge

	cm, err := ts.Kube("dst").CoreV1().ConfigMaps("default").Get(ctx, "after", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "b", cm.Data["a"])
}
