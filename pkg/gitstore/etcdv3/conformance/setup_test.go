package conformance

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/client/v3/kubernetes"

	"k8s.io/apimachinery/pkg/api/apitesting"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/apis/example"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/utils/clock"
)

var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func init() {
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	utilruntime.Must(example.AddToScheme(scheme))
	utilruntime.Must(examplev1.AddToScheme(scheme))
}

// valuePrefix is what the default transformer puts in front of every stored
// value, as upstream's tests do; it makes the stored bytes non-JSON, so the
// store keeps them verbatim.
const valuePrefix = "test!"

// maxLimit mirrors the etcd3 store's cap on the page size it asks for.
const maxLimit = 10000

// pollTimeout bounds every wait on an asynchronous condition.
const pollTimeout = 30 * time.Second

func newPod() runtime.Object     { return &example.Pod{} }
func newPodList() runtime.Object { return &example.PodList{} }

type setupOptions struct {
	codec       runtime.Codec
	prefix      string
	transformer value.Transformer
	leaseConfig etcd3.LeaseManagerConfig
	backend     backendOptions
}

type setupOption func(*setupOptions)

func withCodec(c runtime.Codec) setupOption {
	return func(o *setupOptions) { o.codec = c }
}

// withTransformer replaces the default (switchable prefix) transformer.
func withTransformer(tr value.Transformer) setupOption {
	return func(o *setupOptions) { o.transformer = tr }
}

func withProgressNotifyInterval(d time.Duration) setupOption {
	return func(o *setupOptions) { o.backend.progressNotifyInterval = d }
}

func withLeaseConfig(c etcd3.LeaseManagerConfig) setupOption {
	return func(o *setupOptions) { o.leaseConfig = c }
}

// testEnv is one etcd3 store over a fresh backend.
type testEnv struct {
	ctx    context.Context
	store  storage.Interface
	client *kubernetes.Client
	codec  runtime.Codec
	// prefix is the default transformer's innermost layer; switchable wraps
	// it so tests can swap transformers under a running store. Both are nil
	// when withTransformer replaced them.
	prefix     *storagetesting.PrefixTransformer
	switchable *switchableTransformer
}

// setup builds the store the way upstream's etcd3 tests do: example Pods,
// the test codec, a prefix transformer, "/pods/" as resource prefix.
func setup(t testing.TB, opts ...setupOption) *testEnv {
	t.Helper()
	o := setupOptions{
		codec:       apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion),
		leaseConfig: etcd3.NewDefaultLeaseManagerConfig(),
	}
	// Upstream's value: tests must not wait out a longer lease reuse.
	o.leaseConfig.ReuseDurationSeconds = 1
	for _, opt := range opts {
		opt(&o)
	}
	e := &testEnv{ctx: context.Background(), codec: o.codec}
	transformer := o.transformer
	if transformer == nil {
		e.prefix = storagetesting.NewPrefixTransformer([]byte(valuePrefix), false)
		e.switchable = newSwitchableTransformer(e.prefix)
		transformer = e.switchable
	}
	e.client = newClient(t, o.backend)

	versioner := storage.APIObjectVersioner{}
	compactor := etcd3.NewCompactor(e.client.Client, 0, clock.RealClock{}, nil)
	t.Cleanup(compactor.Stop)
	s, err := etcd3.New(e.client, compactor, o.codec, newPod, newPodList, o.prefix, "/pods/",
		schema.GroupResource{Resource: "pods"}, transformer, o.leaseConfig,
		etcd3.NewDefaultDecoder(o.codec, versioner), versioner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	e.store = s
	return e
}

// kvRecorder is the recorder wrapped around the client's KV.
func (e *testEnv) kvRecorder() *storagetesting.KVRecorder {
	return e.client.KV.(*storagetesting.KVRecorder)
}

// listRecorder is the recorder wrapped around the client's Kubernetes API.
func (e *testEnv) listRecorder() *storagetesting.KubernetesRecorder {
	return e.client.Kubernetes.(*storagetesting.KubernetesRecorder)
}

// withPrefixTransformer lets upstream swap the prefix transformer.
func (e *testEnv) withPrefixTransformer() storagetesting.InterfaceWithPrefixTransformer {
	return &transformableStore{Interface: e.store, tr: e.switchable}
}

// withTransformerOverride lets upstream wrap the transformer.
func (e *testEnv) withTransformerOverride(s storage.Interface) storagetesting.InterfaceWithTransformerOverride {
	return &transformableStore{Interface: s, tr: e.switchable}
}

// switchableTransformer delegates to a transformer that tests can replace
// while the store runs; the store and its watcher share it, so a swap
// reaches both (upstream pokes the store's private fields instead).
type switchableTransformer struct {
	base *storagetesting.PrefixTransformer
	cur  atomic.Pointer[value.Transformer]
}

var _ value.Transformer = (*switchableTransformer)(nil)

func newSwitchableTransformer(base *storagetesting.PrefixTransformer) *switchableTransformer {
	s := &switchableTransformer{base: base}
	s.set(base)
	return s
}

func (s *switchableTransformer) get() value.Transformer   { return *s.cur.Load() }
func (s *switchableTransformer) set(tr value.Transformer) { s.cur.Store(&tr) }

func (s *switchableTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	return s.get().TransformFromStorage(ctx, data, dataCtx)
}

func (s *switchableTransformer) TransformToStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, error) {
	return s.get().TransformToStorage(ctx, data, dataCtx)
}

// transformableStore adds the transformer hooks upstream's suite asks for.
type transformableStore struct {
	storage.Interface
	tr *switchableTransformer
}

func (s *transformableStore) UpdatePrefixTransformer(modify storagetesting.PrefixTransformerModifier) func() {
	orig := s.tr.get()
	copied := *s.tr.base
	s.tr.set(modify(&copied))
	return func() { s.tr.set(orig) }
}

func (s *transformableStore) UpdateTransformer(modify storagetesting.TransformerModifier) func() {
	orig := s.tr.get()
	s.tr.set(modify(orig))
	return func() { s.tr.set(orig) }
}

// checkStorageInvariants reads the raw value of key and checks that what
// the store wrote carries neither a resourceVersion nor a selfLink.
func (e *testEnv) checkStorageInvariants() storagetesting.KeyValidation {
	return func(ctx context.Context, t *testing.T, key string) {
		resp, err := e.client.KV.Get(ctx, key)
		if err != nil {
			t.Fatalf("Get %s: %v", key, err)
		}
		if len(resp.Kvs) == 0 {
			t.Fatalf("no value stored at %s", key)
		}
		raw := resp.Kvs[0].Value
		if len(raw) < len(valuePrefix) || string(raw[:len(valuePrefix)]) != valuePrefix {
			t.Fatalf("stored value of %s lacks the transformer prefix: %q", key, raw)
		}
		decoded, err := runtime.Decode(e.codec, raw[len(valuePrefix):])
		if err != nil {
			t.Fatalf("decoding stored %s: %v\n%s", key, err, raw)
		}
		pod := decoded.(*example.Pod)
		if pod.ResourceVersion != "" {
			t.Errorf("stored object has resourceVersion %q, want none", pod.ResourceVersion)
		}
		if pod.SelfLink != "" {
			t.Errorf("stored object has selfLink %q, want none", pod.SelfLink)
		}
	}
}

// checkStorageCalls counts what a paged list cost: values transformed and
// range requests sent (a streamed read counts as one request).
func (e *testEnv) checkStorageCalls() storagetesting.CallsValidation {
	return func(t *testing.T, pageSize, processed uint64) {
		if reads := e.prefix.GetReadsAndReset(); reads != processed {
			t.Errorf("values transformed: %d, want %d", reads, processed)
		}
		want := uint64(1)
		if pageSize != 0 {
			// The store doubles the page size after every short page.
			limit := pageSize
			for sum := uint64(1); sum < processed; {
				limit = min(limit*2, maxLimit)
				sum += limit
				want++
			}
		}
		rec := e.kvRecorder()
		if got := rec.GetReadsAndReset() + rec.GetStreamReadsAndReset(); got != want {
			t.Fatalf("range requests: %d, want %d", got, want)
		}
	}
}

// increaseRV writes a key outside the resource prefix, so the revision
// moves without the store's watchers seeing an event.
func (e *testEnv) increaseRV() storagetesting.IncreaseRVFunc {
	return func(ctx context.Context, t *testing.T) int64 {
		resp, err := e.client.KV.Put(ctx, "increaseRV", "ok")
		if err != nil {
			t.Fatalf("Put increaseRV: %v", err)
		}
		return resp.Header.Revision
	}
}

// compaction compacts through etcd3.Compact, as the apiserver's compactor
// does, and waits until the store has seen the new compaction revision.
func (e *testEnv) compaction() storagetesting.Compaction {
	return func(ctx context.Context, t *testing.T, resourceVersion string) {
		rv, err := storage.APIObjectVersioner{}.ParseResourceVersion(resourceVersion)
		if err != nil {
			t.Fatal(err)
		}
		version, _, _, err := etcd3.Compact(ctx, e.client.Client, 0, int64(rv))
		if err != nil {
			// The compare on compact_rev_key failed: retry with its version.
			_, _, _, err = etcd3.Compact(ctx, e.client.Client, version, int64(rv))
		}
		if err != nil {
			t.Fatalf("compacting at %d: %v", rv, err)
		}
		if !utilfeature.DefaultFeatureGate.Enabled(features.ListFromCacheSnapshot) {
			return
		}
		compacted := e.store.(interface{ CompactRevision() int64 })
		eventually(t, "the store observes compaction at "+resourceVersion, func() bool {
			return compacted.CompactRevision() == int64(rv)
		})
	}
}

// eventually polls cond until it holds, failing t after pollTimeout.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, pollTimeout, 10*time.Millisecond, "timed out after %v waiting until %s", pollTimeout, what)
}

// resetFeatureSupportChecker gives t a fresh process-wide feature checker:
// a backend that answers RangeStream with Unimplemented marks it unsupported
// for ten minutes, which must not leak into the next test.
func resetFeatureSupportChecker(t *testing.T) {
	t.Helper()
	orig := etcdfeature.DefaultFeatureSupportChecker
	etcdfeature.DefaultFeatureSupportChecker = etcdfeature.NewDefaultFeatureSupportChecker()
	t.Cleanup(func() { etcdfeature.DefaultFeatureSupportChecker = orig })
}

// waitForProgressSupport waits until the store has learned from the
// server's Status (its version) that RequestWatchProgress is supported.
func waitForProgressSupport(t *testing.T) {
	t.Helper()
	eventually(t, "the server is known to support RequestWatchProgress", func() bool {
		return etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RequestWatchProgress)
	})
}

// corruptObjectError returns the error type the etcd3 store treats as "this
// object is corrupt"; the type is private, so it is taken from the public
// wrapper that produces it.
func corruptObjectError() error {
	tr := etcd3.WithCorruptObjErrorHandlingTransformer(failingTransformer{})
	_, _, err := tr.TransformFromStorage(context.Background(), nil, value.DefaultContext{})
	return err
}

type failingTransformer struct{}

func (failingTransformer) TransformFromStorage(context.Context, []byte, value.Context) ([]byte, bool, error) {
	return nil, false, errors.New("bits flipped")
}

func (failingTransformer) TransformToStorage(context.Context, []byte, value.Context) ([]byte, error) {
	return nil, errors.New("bits flipped")
}
