package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"k8s.io/apimachinery/pkg/api/apitesting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	examplev1 "k8s.io/apiserver/pkg/apis/example/v1"
	"k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	storagetesting "k8s.io/apiserver/pkg/storage/testing"
	"k8s.io/apiserver/pkg/storage/value"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// One test per storage-suite function that upstream's etcd3 store tests
// call, named as upstream names them; README.md lists them all.

func TestCreate(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestCreate(e.ctx, t, e.store, e.checkStorageInvariants())
}

func TestCreateWithTTL(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestCreateWithTTL(e.ctx, t, e.store)
}

func TestCreateWithKeyExist(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestCreateWithKeyExist(e.ctx, t, e.store)
}

func TestGet(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGet(e.ctx, t, e.store)
}

func TestUnconditionalDelete(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestUnconditionalDelete(e.ctx, t, e.store)
}

func TestConditionalDelete(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestConditionalDelete(e.ctx, t, e.store)
}

func TestDeleteWithSuggestion(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestDeleteWithSuggestion(e.ctx, t, e.store)
}

func TestDeleteWithSuggestionAndConflict(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestDeleteWithSuggestionAndConflict(e.ctx, t, e.store)
}

func TestDeleteWithSuggestionOfDeletedObject(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestDeleteWithSuggestionOfDeletedObject(e.ctx, t, e.store)
}

func TestValidateDeletionWithSuggestion(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestValidateDeletionWithSuggestion(e.ctx, t, e.store)
}

func TestValidateDeletionWithOnlySuggestionValid(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestValidateDeletionWithOnlySuggestionValid(e.ctx, t, e.store)
}

func TestDeleteWithConflict(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestDeleteWithConflict(e.ctx, t, e.store)
}

func TestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	codec := &failableCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
	e := setup(t, withCodec(codec))
	storagetesting.RunTestDeleteWithConflictAndMissingExpectedTransformOrDecodeError(e.ctx, t, e.store, codec.setFailing)
}

func TestDeleteWithConflictAndExpectedTransformError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	tr := &failableTransformer{Transformer: storagetesting.NewPrefixTransformer([]byte(valuePrefix), false)}
	e := setup(t, withTransformer(tr))
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(e.ctx, t, e.store, tr.setFailing)
}

func TestDeleteWithConflictAndExpectedDecodeError(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	codec := &failableCodec{Codec: apitesting.TestCodec(codecs, examplev1.SchemeGroupVersion)}
	e := setup(t, withCodec(codec))
	storagetesting.RunTestDeleteExpectedTransformOrDecodeError(e.ctx, t, e.store, codec.setFailing)
}

func TestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeFailure(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	e := setup(t)
	storagetesting.RunTestDeleteWithSuggestionAndMissingExpectedTransformOrDecodeError(e.ctx, t, e.store)
}

func TestPreconditionalDeleteWithSuggestion(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestPreconditionalDeleteWithSuggestion(e.ctx, t, e.store)
}

func TestPreconditionalDeleteWithSuggestionPass(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestPreconditionalDeleteWithOnlySuggestionPass(e.ctx, t, e.store)
}

func TestListPaging(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestListPaging(e.ctx, t, e.store)
}

func TestGetListNonRecursive(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGetListNonRecursive(e.ctx, t, e.increaseRV(), e.store)
}

func TestGetListRecursivePrefix(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGetListRecursivePrefix(e.ctx, t, e.store)
}

func TestKeySchema(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestKeySchema(e.ctx, t, e.store)
}

func TestGetListWithErrorAggregation(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, true)
	e := setup(t)
	s := etcd3.NewStoreWithUnsafeCorruptObjectDeletion(e.store, schema.GroupResource{Resource: "pods"})
	storagetesting.RunTestGetListWithErrorAggregation(e.ctx, t, e.withTransformerOverride(s), corruptObjectError())
}

func TestGetListWithoutErrorAggregation(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.AllowUnsafeMalformedObjectDeletion, false)
	e := setup(t)
	storagetesting.RunTestGetListWithoutErrorAggregation(e.ctx, t, e.withTransformerOverride(e.store), corruptObjectError())
}

func TestGuaranteedUpdate(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGuaranteedUpdate(e.ctx, t, e.withPrefixTransformer(), e.checkStorageInvariants())
}

func TestGuaranteedUpdateWithTTL(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGuaranteedUpdateWithTTL(e.ctx, t, e.store)
}

func TestGuaranteedUpdateChecksStoredData(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGuaranteedUpdateChecksStoredData(e.ctx, t, e.withPrefixTransformer())
}

func TestGuaranteedUpdateWithConflict(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGuaranteedUpdateWithConflict(e.ctx, t, e.store)
}

func TestGuaranteedUpdateWithSuggestionAndConflict(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestGuaranteedUpdateWithSuggestionAndConflict(e.ctx, t, e.store)
}

func TestTransformationFailure(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestTransformationFailure(e.ctx, t, e.withPrefixTransformer())
}

// TestList runs the list suite with the RangeStream gate off and on. With it
// on, the store tries the streamed range first and falls back to paged
// ranges when the server answers Unimplemented; ServedByRangeStream then
// says which of the two the backend got.
func TestList(t *testing.T) {
	for _, rangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("rangeStream=%v", rangeStream), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.EtcdRangeStream, rangeStream)
			resetFeatureSupportChecker(t)
			e := setup(t)
			storagetesting.RunTestList(e.ctx, t, e.store, e.compaction(), false, e.listRecorder())
			streamed := e.kvRecorder().GetStreamReadsAndReset()
			t.Run("ServedByRangeStream", func(t *testing.T) {
				if rangeStream && streamed == 0 {
					t.Error("the gate is on but no list was served by RangeStream")
				}
				if !rangeStream && streamed > 0 {
					t.Errorf("the gate is off but %d lists used RangeStream", streamed)
				}
			})
		})
	}
}

func TestConsistentList(t *testing.T) {
	for _, rangeStream := range []bool{false, true} {
		t.Run(fmt.Sprintf("rangeStream=%v", rangeStream), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.EtcdRangeStream, rangeStream)
			resetFeatureSupportChecker(t)
			e := setup(t)
			storagetesting.RunTestConsistentList(e.ctx, t, e.store, e.increaseRV(), false, true, false)
		})
	}
}

func TestCompactRevision(t *testing.T) {
	// The store learns of compactions by watching compact_rev_key, which
	// only happens with ListFromCacheSnapshot.
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, true)
	e := setup(t)
	storagetesting.RunTestCompactRevision(e.ctx, t, e.store, e.increaseRV(), e.compaction())
}

func TestListContinuation(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestListContinuation(e.ctx, t, e.store, e.checkStorageCalls())
}

func TestListPaginationRareObject(t *testing.T) {
	// ListFromCacheSnapshot adds a read of compact_rev_key that the call
	// count does not expect (as upstream).
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.ListFromCacheSnapshot, false)
	e := setup(t)
	storagetesting.RunTestListPaginationRareObject(e.ctx, t, e.store, e.checkStorageCalls())
}

func TestListContinuationWithFilter(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestListContinuationWithFilter(e.ctx, t, e.store, e.checkStorageCalls())
}

func TestNamespaceScopedList(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestNamespaceScopedList(e.ctx, t, e.store)
}

func TestListInconsistentContinuation(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestListInconsistentContinuation(e.ctx, t, e.store, e.compaction())
}

func TestListResourceVersionMatch(t *testing.T) {
	e := setup(t)
	storagetesting.RunTestListResourceVersionMatch(e.ctx, t, e.withPrefixTransformer())
}

func TestStats(t *testing.T) {
	for _, sizeEstimate := range []bool{true, false} {
		t.Run(fmt.Sprintf("SizeBasedListCostEstimate=%v", sizeEstimate), func(t *testing.T) {
			e := setup(t)
			if sizeEstimate {
				s := e.store.(interface {
					EnableResourceSizeEstimation(storage.KeysFunc) error
				})
				if err := s.EnableResourceSizeEstimation(e.podKeys); err != nil {
					t.Fatal(err)
				}
			}
			storagetesting.RunTestStats(e.ctx, t, e.store, e.codec, e.switchable, sizeEstimate)
		})
	}
}

// podKeys lists the stored keys of the resource, as the store's own
// (private) key lister does.
func (e *testEnv) podKeys(ctx context.Context) ([]string, error) {
	resp, err := e.client.KV.Get(ctx, "/pods/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		keys = append(keys, string(kv.Key))
	}
	return keys, nil
}

// failableTransformer fails every read while failing is set.
type failableTransformer struct {
	value.Transformer
	failing atomic.Bool
}

func (f *failableTransformer) setFailing(on bool) { f.failing.Store(on) }

func (f *failableTransformer) TransformFromStorage(ctx context.Context, data []byte, dataCtx value.Context) ([]byte, bool, error) {
	if f.failing.Load() {
		return nil, false, errors.New("synthetic transform failure")
	}
	return f.Transformer.TransformFromStorage(ctx, data, dataCtx)
}

// failableCodec fails every decode while failing is set.
type failableCodec struct {
	runtime.Codec
	failing atomic.Bool
}

func (f *failableCodec) setFailing(on bool) { f.failing.Store(on) }

func (f *failableCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if f.failing.Load() {
		return nil, nil, errors.New("synthetic decode failure")
	}
	return f.Codec.Decode(data, defaults, into)
}
