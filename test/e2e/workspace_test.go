package e2e

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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
	"github.com/heaven-dev/heaven/test/e2e/widgetcontroller"
)

// The heavens and merges of the workspace-per-controller test.
const (
	wsMain, wsCtrl         = "main", "ctrl"
	wsMainToCtrl           = "main-to-ctrl"
	wsCtrlToMain           = "ctrl-to-main"
	wsNamespace            = "default"
	wsConvergeTimeout      = 10 * time.Second // "within a few seconds", with room for -race
	wsQuietFor             = 3 * time.Second  // no commit on either branch after convergence
	wsPollInterval         = 20 * time.Millisecond
	wsWidgetObjectInGit    = "example.com/widgets/default/w1.json"
	wsWidgetObjectInStatus = "example.com/widgets/default/w1"
)

// TestWorkspacePerController is the workspace-per-controller scenario of
// DESIGN.md: a real controller (widgetcontroller: informer, workqueue,
// reconcile) works in a heaven of its own, ctrl, a fork of the heaven main
// that users edit. Two AutomatedMerges in root merge main into ctrl and
// ctrl into main, resolving conflicts with .spec from main and .status
// from ctrl. The controller only ever talks to ctrl; users only to main
// (except where the test says otherwise).
func TestWorkspacePerController(t *testing.T) {
	e := setUpWorkspaces(t, framework.StartHeavenServer(t, nil))
	e.startController(t)

	t.Run("a user's spec in main and the controller's status in ctrl converge", e.testConverge)
	t.Run("the controller keeps working while main is cut off", e.testCutOff)
	t.Run("a conflict resolves by policy and is reported", e.testConflict)
	t.Run("no ping-pong after convergence", e.testQuiet)
	t.Logf("timings: %s", strings.Join(e.timings, "; "))
}

// workspaceEnv is the heaven-server, its heavens and the controller of the
// test.
type workspaceEnv struct {
	hs         *framework.HeavenServer
	root       dynamic.Interface
	widgets    map[string]dynamic.ResourceInterface // by heaven
	controller *widgetcontroller.Controller
	timings    []string
}

// setUpWorkspaces creates heaven main with the Widget CRD, heaven ctrl as
// a fork of it (applying the CRD there too, as its controller's installer
// would), and the two AutomatedMerges; it returns when both merges are
// Ready.
func setUpWorkspaces(t *testing.T, hs *framework.HeavenServer) *workspaceEnv {
	e := &workspaceEnv{hs: hs, root: hs.Dynamic(server.RootHeaven), widgets: map[string]dynamic.ResourceInterface{}}
	e.createHeaven(t, wsMain, nil)
	e.applyCRD(t, wsMain)
	e.createHeaven(t, wsCtrl, &v1alpha1.Fork{Heaven: wsMain})
	e.applyCRD(t, wsCtrl)
	for _, h := range []string{wsMain, wsCtrl} {
		e.widgets[h] = hs.Dynamic(h).Resource(widgetcontroller.Resource).Namespace(wsNamespace)
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			ctx := t.Context()
			_, err := e.widgets[h].List(ctx, metav1.ListOptions{})
			assert.NoError(c, err)
		}, time.Minute, wsPollInterval, "widgets served in "+h)
	}

	// .spec is main's, .status is ctrl's; anything else main's.
	e.createMerge(t, wsMainToCtrl, wsMain, wsCtrl, v1alpha1.ConflictPolicy{
		Default: v1alpha1.PreferSource,
		Rules: []v1alpha1.ConflictRule{
			{Path: ".spec", Resolution: v1alpha1.PreferSource},
			{Path: ".status", Resolution: v1alpha1.PreferTarget},
		},
	})
	e.createMerge(t, wsCtrlToMain, wsCtrl, wsMain, v1alpha1.ConflictPolicy{
		Default: v1alpha1.PreferTarget,
		Rules: []v1alpha1.ConflictRule{
			{Path: ".spec", Resolution: v1alpha1.PreferTarget},
			{Path: ".status", Resolution: v1alpha1.PreferSource},
		},
	})
	for _, name := range []string{wsMainToCtrl, wsCtrlToMain} {
		e.waitMerge(t, name, "Ready", func(am *v1alpha1.AutomatedMerge) error {
			return wsExpectCondition(am, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonMerged)
		})
	}
	return e
}

// startController runs the widget controller against heaven ctrl until
// the test ends, its logs in the test's.
func (e *workspaceEnv) startController(t *testing.T) {
	c, err := widgetcontroller.New(e.hs.RESTConfig(wsCtrl))
	require.NoError(t, err)
	e.controller = c
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2))).WithName(widgetcontroller.Name)
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Error("the widget controller did not stop within 30s")
		}
	})
}

// testConverge: widgets created, edited and deleted in main reach ctrl;
// the controller's status reaches main.
func (e *workspaceEnv) testConverge(t *testing.T) {
	e.createWidget(t, wsMain, "w1", 1)
	e.record(t, "create in main", e.waitConverged(t, "w1", 1))
	for _, size := range []int64{2, 3, 5} {
		e.setSize(t, wsMain, "w1", size)
		e.record(t, fmt.Sprintf("edit in main (size %d)", size), e.waitConverged(t, "w1", size))
	}

	// main shows the status computed in ctrl: written there by the
	// controller, and by no one in main.
	w, err := e.widgets[wsMain].Get(t.Context(), "w1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(w.GetManagedFields(), func(f metav1.ManagedFieldsEntry) bool {
		return f.Manager == widgetcontroller.Name && f.Subresource == "status"
	}), "main's w1 carries the controller's status, field manager %s: %v", widgetcontroller.Name, w.GetManagedFields())

	// Creates and deletes merge too.
	e.createWidget(t, wsMain, "w2", 8)
	e.record(t, "second widget created in main", e.waitConverged(t, "w2", 8))
	require.NoError(t, e.widgets[wsMain].Delete(t.Context(), "w2", metav1.DeleteOptions{}))
	e.record(t, "delete in main reaches ctrl", timed(func() {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			_, err := e.widgets[wsCtrl].Get(t.Context(), "w2", metav1.GetOptions{})
			assertNotFound(c, err)
		}, wsConvergeTimeout, wsPollInterval, "w2 gone from ctrl")
	}))
}

// testCutOff: with both merges suspended (main, or the network, gone), a
// user edits ctrl directly and the controller keeps reconciling there;
// main is untouched until the merges resume.
func (e *workspaceEnv) testCutOff(t *testing.T) {
	e.suspend(t, true, wsMainToCtrl, wsCtrlToMain)
	mainHead := e.heads(t)[0]
	e.setSize(t, wsCtrl, "w1", 7)
	e.record(t, "controller in ctrl while cut off", e.waitStatus(t, wsCtrl, "w1", 7))
	w, err := e.widgets[wsMain].Get(t.Context(), "w1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 5, widgetcontroller.Size(w), "main's spec while the merges are suspended")
	assert.EqualValues(t, 5, widgetcontroller.StatusOf(w).ObservedSize, "main's status while the merges are suspended")
	assert.Equal(t, mainHead, e.heads(t)[0], "main's branch while the merges are suspended")

	start := time.Now()
	e.suspend(t, false, wsMainToCtrl, wsCtrlToMain)
	e.waitConverged(t, "w1", 7)
	e.record(t, "catch-up after resuming", time.Since(start))
}

// testConflict: the same spec field edited in both heavens between merges
// (both suspended) is a conflict; main's value wins, in both heavens, the
// controller follows it, the conflict is in main-to-ctrl's status and an
// Event in root, and ctrl's losing value stays in git.
func (e *workspaceEnv) testConflict(t *testing.T) {
	e.suspend(t, true, wsMainToCtrl, wsCtrlToMain)
	e.setSize(t, wsMain, "w1", 10)
	e.setSize(t, wsCtrl, "w1", 20)
	e.waitStatus(t, wsCtrl, "w1", 20)
	before, err := e.widgets[wsCtrl].Get(t.Context(), "w1", metav1.GetOptions{})
	require.NoError(t, err)

	// main into ctrl first, so that its status still shows this merge
	// when the test reads it (status reports the last merge of a source).
	start := time.Now()
	e.suspend(t, false, wsMainToCtrl)
	var merged v1alpha1.SourceMergeStatus
	am := e.waitMerge(t, wsMainToCtrl, "reports the conflict", func(am *v1alpha1.AutomatedMerge) error {
		if err := wsExpectCondition(am, v1alpha1.ConditionConflicted, metav1.ConditionTrue, v1alpha1.ReasonResolved); err != nil {
			return err
		}
		if len(am.Status.Sources) != 1 || am.Status.Sources[0].Conflicts == 0 {
			return fmt.Errorf("sources %+v", am.Status.Sources)
		}
		merged = am.Status.Sources[0]
		return nil
	})
	i := slices.IndexFunc(am.Status.Conflicts, func(c v1alpha1.MergeConflict) bool { return c.Path == ".spec.size" })
	require.GreaterOrEqual(t, i, 0, "a .spec.size conflict in %+v", am.Status.Conflicts)
	assert.Equal(t, v1alpha1.MergeConflict{
		Heaven: wsMain, Object: wsWidgetObjectInStatus, Path: ".spec.size",
		Base: ptr.To("7"), Target: ptr.To("20"), Source: ptr.To("10"), Resolution: v1alpha1.PreferSource,
	}, am.Status.Conflicts[i])
	for _, c := range am.Status.Conflicts {
		assert.NotEqual(t, v1alpha1.Manual, c.Resolution, "every conflict is resolved: %+v", c)
	}
	// The losing value is in git: the merge commit's first parent is
	// ctrl's side, its second parent main's.
	assert.EqualValues(t, 20, e.sizeInGit(t, merged.TargetCommit+"^1"), "ctrl's side of the merge")
	assert.EqualValues(t, 10, e.sizeInGit(t, merged.TargetCommit+"^2"), "main's side of the merge")
	assert.EqualValues(t, 10, e.sizeInGit(t, merged.TargetCommit), "the merge")
	e.waitStatus(t, wsCtrl, "w1", 10)

	e.suspend(t, false, wsCtrlToMain)
	e.waitConverged(t, "w1", 10)
	e.record(t, "conflict resolved and converged", time.Since(start))

	after, err := e.widgets[wsCtrl].Get(t.Context(), "w1", metav1.GetOptions{})
	require.NoError(t, err)
	// ctrl's spec changed (20 → 10) in the merge: its controller must see a
	// generation it has not observed (pkg/merge takes the next one).
	assert.Greater(t, after.GetGeneration(), before.GetGeneration(), "the merged spec has a new generation")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		events, err := e.hs.Kube(server.RootHeaven).CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		require.NoError(c, err)
		for _, ev := range events.Items {
			if ev.InvolvedObject.Kind == v1alpha1.AutomatedMergeKind && ev.InvolvedObject.Name == wsMainToCtrl &&
				ev.Reason == "MergeConflict" && ev.Type == corev1.EventTypeWarning &&
				strings.Contains(ev.Message, wsWidgetObjectInStatus+" .spec.size") && strings.Contains(ev.Message, string(v1alpha1.PreferSource)) {
				return
			}
		}
		c.Errorf("none among %d Events", len(events.Items))
	}, wsConvergeTimeout, wsPollInterval, "a MergeConflict Event for .spec.size in root")
}

// testQuiet: once converged, neither branch moves: the last merge in
// either direction finds nothing to do, the controller nothing to write.
func (e *workspaceEnv) testQuiet(t *testing.T) {
	var heads [2]string
	settle := timed(func() {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			heads = e.heads(c)
			byHeaven := map[string]string{wsMain: heads[0], wsCtrl: heads[1]}
			for _, name := range []string{wsMainToCtrl, wsCtrlToMain} {
				am, err := e.merge(t.Context(), name)
				require.NoError(c, err)
				if s := am.Status.Sources; len(s) == 1 && s[0].TargetCommit == byHeaven[am.Spec.Target] && s[0].SourceCommit == byHeaven[s[0].Heaven] {
					return
				}
			}
			c.Errorf("heads main %s, ctrl %s", heads[0], heads[1])
		}, wsConvergeTimeout, wsPollInterval, "one branch's head is the last merge of the other's")
	})
	merges := e.mergeStatuses(t)
	revisions := e.revisions(t)
	writes := e.controller.StatusWrites()

	// Quiet for wsQuietFor, a real passage of time, polled.
	quiet := time.NewTicker(100 * time.Millisecond)
	defer quiet.Stop()
	for deadline := time.Now().Add(wsQuietFor); time.Now().Before(deadline); <-quiet.C {
		require.Equal(t, heads, e.heads(t), "a branch moved although nothing changed")
		require.Equal(t, revisions, e.revisions(t), "a heaven's revision moved although nothing changed")
	}
	assert.Equal(t, merges, e.mergeStatuses(t), "merge statuses changed although nothing did")
	assert.Equal(t, writes, e.controller.StatusWrites(), "the controller wrote status although nothing changed")
	e.record(t, fmt.Sprintf("settled, then quiet for %s (main %.12s, ctrl %.12s, revisions %v)", wsQuietFor, heads[0], heads[1], revisions), settle)
}

// record logs a measured time and keeps it for the summary.
func (e *workspaceEnv) record(t *testing.T, what string, d time.Duration) {
	t.Helper()
	d = d.Round(time.Millisecond)
	t.Logf("%s: %s", what, d)
	e.timings = append(e.timings, fmt.Sprintf("%s %s", what, d))
}

func (e *workspaceEnv) createHeaven(t *testing.T, name string, fork *v1alpha1.Fork) {
	t.Helper()
	h := &v1alpha1.Heaven{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "Heaven"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.HeavenSpec{Fork: fork},
	}
	_, err := e.root.Resource(v1alpha1.HeavensResource).Create(t.Context(), wsUnstructured(t, h), metav1.CreateOptions{})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		u, err := e.root.Resource(v1alpha1.HeavensResource).Get(ctx, name, metav1.GetOptions{})
		require.NoError(c, err)
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != string(v1alpha1.HeavenPhaseReady) {
			c.Errorf("phase %q", phase)
			return
		}
	}, time.Minute, wsPollInterval, "Heaven "+name+" Ready")
}

// applyCRD creates the Widget CRD in heaven unless it is there already,
// and waits until it is established.
func (e *workspaceEnv) applyCRD(t *testing.T, heaven string) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(e.hs.RESTConfig(heaven)).ApiextensionsV1().CustomResourceDefinitions()
	crd := widgetcontroller.CRD()
	if _, err := crds.Create(t.Context(), crd, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ctx := t.Context()
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		require.NoError(c, err)
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return
			}
		}
		c.Errorf("conditions %+v", got.Status.Conditions)
	}, time.Minute, wsPollInterval, crd.Name+" established in "+heaven)
}

func (e *workspaceEnv) createMerge(t *testing.T, name, source, target string, policy v1alpha1.ConflictPolicy) {
	t.Helper()
	am := &v1alpha1.AutomatedMerge{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: v1alpha1.AutomatedMergeKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.AutomatedMergeSpec{Sources: []string{source}, Target: target, ConflictPolicy: policy},
	}
	_, err := e.root.Resource(v1alpha1.AutomatedMergesResource).Create(t.Context(), wsUnstructured(t, am), metav1.CreateOptions{})
	require.NoError(t, err)
}

func (e *workspaceEnv) merge(ctx context.Context, name string) (*v1alpha1.AutomatedMerge, error) {
	u, err := e.root.Resource(v1alpha1.AutomatedMergesResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var am v1alpha1.AutomatedMerge
	return &am, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &am)
}

// waitMerge polls AutomatedMerge name until check accepts it.
func (e *workspaceEnv) waitMerge(t *testing.T, name, what string, check func(*v1alpha1.AutomatedMerge) error) *v1alpha1.AutomatedMerge {
	t.Helper()
	var am *v1alpha1.AutomatedMerge
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var err error
		am, err = e.merge(t.Context(), name)
		require.NoError(c, err)
		assert.NoError(c, check(am))
	}, wsConvergeTimeout, wsPollInterval, name+": "+what)
	return am
}

// mergeStatuses are both merges' per-source statuses.
func (e *workspaceEnv) mergeStatuses(t *testing.T) map[string][]v1alpha1.SourceMergeStatus {
	t.Helper()
	out := map[string][]v1alpha1.SourceMergeStatus{}
	for _, name := range []string{wsMainToCtrl, wsCtrlToMain} {
		am, err := e.merge(t.Context(), name)
		require.NoError(t, err)
		out[name] = am.Status.Sources
	}
	return out
}

// suspend sets spec.suspend of merges and waits until the merge
// controller has acted on it.
func (e *workspaceEnv) suspend(t *testing.T, suspend bool, names ...string) {
	t.Helper()
	for _, name := range names {
		u, err := e.root.Resource(v1alpha1.AutomatedMergesResource).Patch(t.Context(), name, types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend), metav1.PatchOptions{})
		require.NoError(t, err)
		generation := u.GetGeneration()
		e.waitMerge(t, name, fmt.Sprintf("observes suspend=%t", suspend), func(am *v1alpha1.AutomatedMerge) error {
			if am.Status.ObservedGeneration < generation {
				return fmt.Errorf("observed generation %d, want %d", am.Status.ObservedGeneration, generation)
			}
			if suspend {
				return wsExpectCondition(am, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonSuspended)
			}
			return nil
		})
	}
}

func (e *workspaceEnv) createWidget(t *testing.T, heaven, name string, size int64) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetcontroller.Resource.GroupVersion().String(), "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": wsNamespace},
		"spec":     map[string]any{"size": size},
	}}
	_, err := e.widgets[heaven].Create(t.Context(), w, metav1.CreateOptions{})
	require.NoError(t, err)
}

// setSize is a user's edit of a widget's spec.size in heaven.
func (e *workspaceEnv) setSize(t *testing.T, heaven, name string, size int64) {
	t.Helper()
	_, err := e.widgets[heaven].Patch(t.Context(), name, types.MergePatchType,
		fmt.Appendf(nil, `{"spec":{"size":%d}}`, size), metav1.PatchOptions{})
	require.NoError(t, err)
}

// waitStatus waits until the controller reported size for widget name in
// heaven, and returns how long it took.
func (e *workspaceEnv) waitStatus(t *testing.T, heaven, name string, size int64) time.Duration {
	t.Helper()
	return timed(func() {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			w, err := e.widgets[heaven].Get(t.Context(), name, metav1.GetOptions{})
			require.NoError(c, err)
			assert.NoError(c, wsExpectReported(w, size))
		}, wsConvergeTimeout, wsPollInterval, "%s's %s reported at size %d", heaven, name, size)
	})
}

// waitConverged waits until widget name has spec.size size and the
// controller's status for it in both heavens, the same spec and status in
// both, and returns how long it took.
func (e *workspaceEnv) waitConverged(t *testing.T, name string, size int64) time.Duration {
	t.Helper()
	return timed(func() {
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var sides []*unstructured.Unstructured
			for _, h := range []string{wsMain, wsCtrl} {
				w, err := e.widgets[h].Get(t.Context(), name, metav1.GetOptions{})
				require.NoError(c, err, h)
				require.NoError(c, wsExpectReported(w, size), h)
				sides = append(sides, w)
			}
			for _, field := range []string{"spec", "status"} {
				assert.Truef(c, apiequality.Semantic.DeepEqual(sides[0].Object[field], sides[1].Object[field]),
					"%s differs: main %v, ctrl %v", field, sides[0].Object[field], sides[1].Object[field])
			}
		}, wsConvergeTimeout, wsPollInterval, "%s converged at size %d", name, size)
	})
}

// heads are the heads of main's and ctrl's branches, read by the git CLI.
func (e *workspaceEnv) heads(t require.TestingT) [2]string {
	out := strings.Fields(e.hs.Git(t, "rev-parse", wsMain, wsCtrl))
	require.Len(t, out, 2)
	return [2]string{out[0], out[1]}
}

// revisions are main's and ctrl's revisions, as their API servers report
// them (a list's resourceVersion).
func (e *workspaceEnv) revisions(t *testing.T) [2]string {
	t.Helper()
	var out [2]string
	for i, h := range []string{wsMain, wsCtrl} {
		list, err := e.widgets[h].List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		out[i] = list.GetResourceVersion()
	}
	return out
}

// timed runs wait and returns how long it took.
func timed(wait func()) time.Duration {
	start := time.Now()
	wait()
	return time.Since(start)
}

// wsExpectReported checks that a widget has spec.size size and the
// controller's status for it as it is.
func wsExpectReported(w *unstructured.Unstructured, size int64) error {
	if got := widgetcontroller.Size(w); got != size {
		return fmt.Errorf("spec.size %d, want %d", got, size)
	}
	if got, want := widgetcontroller.StatusOf(w), widgetcontroller.Desired(w); got != want {
		return fmt.Errorf("status %+v, want %+v", got, want)
	}
	return nil
}

func wsExpectCondition(am *v1alpha1.AutomatedMerge, typ string, status metav1.ConditionStatus, reason string) error {
	c := meta.FindStatusCondition(am.Status.Conditions, typ)
	if c == nil || c.Status != status || c.Reason != reason || c.ObservedGeneration != am.Generation {
		return fmt.Errorf("condition %s is %+v, want %s %s at generation %d", typ, c, status, reason, am.Generation)
	}
	return nil
}

func wsUnstructured(t *testing.T, obj any) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: m}
}

// wsSizeInGit is spec.size of a Widget as stored in git at rev.
func (e *workspaceEnv) sizeInGit(t *testing.T, rev string) int64 {
	t.Helper()
	var w unstructured.Unstructured
	require.NoError(t, w.UnmarshalJSON([]byte(e.hs.Git(t, "show", rev+":"+wsWidgetObjectInGit))))
	return widgetcontroller.Size(&w)
}
