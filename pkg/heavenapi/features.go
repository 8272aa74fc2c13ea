package heavenapi

import (
	"sync"

	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// setFeatureDefaults sets the k8s.io/apiserver feature gates in which
// heavens differ from kube-apiserver, once per process.
//
// ConcurrentWatchObjectDecode decodes each storage watch's events in two
// goroutines of its own, to keep up with etcd under a kube-apiserver's
// few, busy watches. A heaven has many quiet ones (one per informer
// watching it, about 14 in a generic heaven) of small objects: one
// goroutine decoding in order is enough, and each costs its stack.
var setFeatureDefaults = sync.OnceValue(func() error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{
		string(features.ConcurrentWatchObjectDecode): false,
	})
})
