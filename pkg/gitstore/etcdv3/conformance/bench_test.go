package conformance

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"k8s.io/apiserver/pkg/features"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2"
)

// The storage suite's benchmark functions, with upstream's dimensions (the
// scalability thresholds of a large cluster). They measure and assert
// nothing, so make test does not run them; make bench-store compares the
// store with etcd directly. Run them with
//
//	go test -run '^$' -bench . -timeout 2h ./pkg/gitstore/etcdv3/conformance/

type benchDims struct{ namespaces, podsPerNamespace, nodes int }

func (d benchDims) String() string {
	return fmt.Sprintf("Namespaces=%d/Pods=%d/Nodes=%d", d.namespaces, d.namespaces*d.podsPerNamespace, d.nodes)
}

func BenchmarkStoreWriteThroughput(b *testing.B) {
	klog.SetLogger(logr.Discard())
	d := benchDims{50, 3_000, 5_000}
	b.Run(d.String(), func(b *testing.B) {
		e := setup(b)
		data := storagetesting.PrepareBenchmarkData(d.namespaces, d.podsPerNamespace, d.nodes)
		b.ResetTimer()
		storagetesting.RunBenchmarkWriteThroughput(e.ctx, b, e.store, data, false, nil)
	})
}

func BenchmarkStoreList(b *testing.B) {
	klog.SetLogger(logr.Discard())
	for _, d := range []benchDims{{10_000, 15, 5_000}, {50, 3_000, 5_000}, {100, 1_100, 1_000}} {
		for _, sizeBased := range []bool{true, false} {
			featuregatetesting.SetFeatureGateDuringTest(b, utilfeature.DefaultFeatureGate, features.SizeBasedListCostEstimate, sizeBased)
			b.Run(fmt.Sprintf("SizeBasedListCostEstimate=%v/%s", sizeBased, d), func(b *testing.B) {
				data := storagetesting.PrepareBenchmarkData(d.namespaces, d.podsPerNamespace, d.nodes)
				e := setup(b)
				require.NoError(b, storagetesting.PrecreateBenchmarkPods(e.ctx, e.store, data))
				storagetesting.RunBenchmarkStoreList(e.ctx, b, e.store, data, false)
			})
		}
	}
}

func BenchmarkStoreStats(b *testing.B) {
	klog.SetLogger(logr.Discard())
	data := storagetesting.PrepareBenchmarkData(50, 3_000, 5_000)
	e := setup(b)
	require.NoError(b, storagetesting.PrecreateBenchmarkPods(e.ctx, e.store, data))
	storagetesting.RunBenchmarkStoreStats(e.ctx, b, e.store)
}
