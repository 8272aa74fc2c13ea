package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
)

// ---- types phase ----
//
// The same work in heavens of both types, on one git server: Heavens
// declared in root, each kept running with 3 configmaps, a ServiceAccount
// and a Deployment (and, in a kubernetes heaven, a NodePort Service, which
// takes an IP and a port from the heaven's allocators). RSS per active
// heaven of each type, then the first request to stopped heavens of each
// type (cold start); kubernetes/generic ratios.

type typesResult struct {
	genericMiB, kubernetesMiB   float64
	genericCold, kubernetesCold float64
}

var heavenTypes = []v1alpha1.HeavenType{v1alpha1.HeavenTypeGeneric, v1alpha1.HeavenTypeKubernetes}

func typesPhase(cfg config) (typesResult, error) {
	var res typesResult
	fmt.Printf("# types (git): %d active and %d stopped heavens of each type\n", cfg.typeHeavens, cfg.coldStarts)
	dataDir, err := os.MkdirTemp("", "bench-server-types-")
	if err != nil {
		return res, err
	}
	ctx := context.Background()

	// 1. Heavens that end up stopped, through a server that evicts them.
	if cfg.coldStarts > 0 {
		bs, err := startServer(server.StorageGit, cfg.shortIdle, dataDir, true)
		if err != nil {
			return res, err
		}
		for _, typ := range heavenTypes {
			_, errs := forEach(cfg.coldStarts, cfg.parallel, func(i int) error {
				rc := bs.restConfig(typedName(typ, "cold", i))
				if err := declareHeaven(ctx, bs, typedName(typ, "cold", i), typ); err != nil {
					return err
				}
				kube, err := kubernetes.NewForConfig(rc)
				if err != nil {
					return err
				}
				_, err = kube.CoreV1().ConfigMaps(ns).Create(ctx, configMap("cm-0", i), metav1.CreateOptions{})
				return err
			}, func(int) {})
			if len(errs) > 0 {
				bs.stop()
				return res, fmt.Errorf("stopped %s heavens: %w", typ, errs[0])
			}
		}
		bs.stop()
	}

	// 2. Active heavens of each type, RSS before and after each.
	bs, err := startServer(server.StorageGit, time.Hour, dataDir, cfg.keep)
	if err != nil {
		return res, err
	}
	defer bs.remove()
	defer bs.stop()
	for _, typ := range heavenTypes {
		before := rss()
		began := time.Now()
		n, errs := forEach(cfg.typeHeavens, cfg.parallel, func(i int) error {
			return activeTypedHeaven(ctx, bs, typedName(typ, "active", i), typ)
		}, func(int) {})
		printErrs(errs)
		if n == 0 {
			return res, fmt.Errorf("no %s heaven could be created: %w", typ, errs[0])
		}
		mib := (rss() - before) / (1 << 20) / float64(n)
		fmt.Printf("%s_heavens=%d seconds=%.1f mib_per_heaven=%.2f\n", typ, n, time.Since(began).Seconds(), mib)
		if typ == v1alpha1.HeavenTypeKubernetes {
			res.kubernetesMiB = mib
			if cfg.heapProfile != "" {
				if err := writeHeapProfile(cfg.heapProfile); err != nil {
					return res, err
				}
			}
		} else {
			res.genericMiB = mib
		}
	}

	// 3. Cold starts, alternating types.
	cold := map[v1alpha1.HeavenType][]float64{}
	for i := 0; i < cfg.coldStarts; i++ {
		for _, typ := range heavenTypes {
			kube, err := kubernetes.NewForConfig(bs.restConfig(typedName(typ, "cold", i)))
			if err != nil {
				return res, err
			}
			t0 := time.Now()
			_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "cm-0", metav1.GetOptions{})
			d := time.Since(t0)
			if err != nil {
				fmt.Printf("cold start %s: %v\n", typedName(typ, "cold", i), err)
				continue
			}
			cold[typ] = append(cold[typ], float64(d.Microseconds())/1000)
		}
	}
	for _, typ := range heavenTypes {
		if c := cold[typ]; len(c) > 0 {
			fmt.Printf("%s_cold_starts=%d p50_ms=%.1f min_ms=%.1f max_ms=%.1f\n", typ, len(c), median(c), slices.Min(c), slices.Max(c))
		}
	}
	res.genericCold, res.kubernetesCold = median(cold[v1alpha1.HeavenTypeGeneric]), median(cold[v1alpha1.HeavenTypeKubernetes])
	if res.genericMiB > 0 && res.genericCold > 0 {
		fmt.Printf("kubernetes/generic: memory %.2f cold start %.2f\n", res.kubernetesMiB/res.genericMiB, res.kubernetesCold/res.genericCold)
	}
	return res, nil
}

func typedName(typ v1alpha1.HeavenType, what string, i int) string {
	return fmt.Sprintf("%s-%s-%04d", typ, what, i)
}

// declareHeaven creates the Heaven of name in root with type typ.
func declareHeaven(ctx context.Context, bs *benchServer, name string, typ v1alpha1.HeavenType) error {
	root, err := dynamic.NewForConfig(bs.restConfig(server.RootHeaven))
	if err != nil {
		return err
	}
	h := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "Heaven",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"type": string(typ)},
	}}
	_, err = root.Resource(v1alpha1.HeavensResource).Create(ctx, h, metav1.CreateOptions{})
	return err
}

// activeTypedHeaven declares heaven name of type typ and gives it its
// objects.
func activeTypedHeaven(ctx context.Context, bs *benchServer, name string, typ v1alpha1.HeavenType) error {
	if err := declareHeaven(ctx, bs, name, typ); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(bs.restConfig(name))
	if err != nil {
		return err
	}
	for k := 0; k < 3; k++ {
		if _, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, configMap(fmt.Sprintf("cm-%d", k), k), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	labels := map[string]string{"app": "web"}
	_, err = kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil || typ != v1alpha1.HeavenTypeKubernetes {
		return err
	}
	_, err = kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeNodePort,
			Selector: labels,
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	return err
}
