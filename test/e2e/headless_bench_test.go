package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestBenchHeadless is make bench-headless: the time from creating a
// Deployment of N replicas to N pods Running, in the headless cluster
// (startHeadlessCluster) and in a plain cluster of the same binaries (one
// kube-apiserver on etcd, its kube-controller-manager, kube-scheduler and
// kwok), on the same machine in the same run, each size measured
// HEAVEN_BENCH_RUNS times (default 3) alternating between the two; it
// prints the medians and their ratio:
//
//	RESULT ready_s_10=… ready_s_100=… plain_s_10=… plain_s_100=… ratio_10=… ratio_100=…
//
// It runs only when HEAVEN_BENCH_HEADLESS is set; HEAVEN_BENCH_CPUPROFILE
// names a file for a CPU profile of heaven-server over the runs.
func TestBenchHeadless(t *testing.T) {
	if os.Getenv("HEAVEN_BENCH_HEADLESS") == "" {
		t.Skip("make bench-headless runs it (HEAVEN_BENCH_HEADLESS=1)")
	}
	runs := 3
	if v := os.Getenv("HEAVEN_BENCH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "HEAVEN_BENCH_RUNS")
		runs = n
	}
	sizes := []int{10, 100}
	const nodes = 2 // kwok's nodes hold 110 pods each

	plain := framework.StartCluster(t, "plain")
	plain.RunKubeScheduler(t)
	plain.RunKwok(t)
	createKwokNodes(t, plain.Client(), nodes)
	headless := startHeadlessCluster(t, nodes)

	clusters := []struct {
		name string
		kube kubernetes.Interface
	}{{"headless", headless.Kube("main")}, {"plain", plain.Client()}}
	if path := os.Getenv("HEAVEN_BENCH_CPUPROFILE"); path != "" {
		// heaven-server runs in this process: its profile over the runs.
		f, err := os.Create(path)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(f))
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	took := map[string][]float64{}
	for run := range runs {
		for _, n := range sizes {
			for _, c := range clusters {
				d := timeToRunning(t, c.kube, fmt.Sprintf("web-%d-%d", n, run), n)
				t.Logf("run %d: %s, %d replicas: %.2fs", run+1, c.name, n, d.Seconds())
				key := fmt.Sprintf("%s_%d", c.name, n)
				took[key] = append(took[key], d.Seconds())
			}
		}
	}
	result := "RESULT"
	for _, n := range sizes {
		result += fmt.Sprintf(" ready_s_%d=%.2f", n, median(took[fmt.Sprintf("headless_%d", n)]))
	}
	for _, n := range sizes {
		result += fmt.Sprintf(" plain_s_%d=%.2f", n, median(took[fmt.Sprintf("plain_%d", n)]))
	}
	for _, n := range sizes {
		result += fmt.Sprintf(" ratio_%d=%.2f", n, median(took[fmt.Sprintf("headless_%d", n)])/median(took[fmt.Sprintf("plain_%d", n)]))
	}
	fmt.Println(result)
}

// benchReadyTimeout bounds one measurement.
const benchReadyTimeout = 5 * time.Minute

// timeToRunning creates Deployment name with n replicas and returns how
// long its n pods took to be Running; then it deletes the Deployment and
// waits until its pods are gone, so that runs start alike.
func timeToRunning(t *testing.T, kube kubernetes.Interface, name string, n int) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*benchReadyTimeout)
	defer cancel()
	match := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: match},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: match},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "nginx", Image: "nginx"}}},
			},
		},
	}
	pods := kube.CoreV1().Pods("default")
	selector := labels.SelectorFromSet(match).String()
	// A watch sees each pod's phase as it changes: the time is the event's,
	// not a poll's.
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return pods.Watch(ctx, o)
		},
	}
	running := map[string]bool{}
	began := time.Now()
	_, err := kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
	require.NoError(t, err)
	waitCtx, cancelWait := context.WithTimeout(ctx, benchReadyTimeout)
	defer cancelWait()
	_, err = watchtools.UntilWithSync(waitCtx, lw, &corev1.Pod{}, nil, func(e watch.Event) (bool, error) {
		if p, ok := e.Object.(*corev1.Pod); ok {
			running[p.Name] = e.Type != watch.Deleted && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
		}
		return countTrue(running) == n, nil
	})
	took := time.Since(began)
	require.NoError(t, err, "%s: %d pods running of %d", name, countTrue(running), n)

	require.NoError(t, kube.AppsV1().Deployments("default").Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector})
		require.NoError(c, err)
		assert.Empty(c, list.Items, "%s: pods left after deleting the Deployment", name)
	}, benchReadyTimeout, 200*time.Millisecond)
	return took
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
