package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// droppedAnnotations are not copied down: they describe the heaven's
// object, not the cluster's.
var droppedAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	"deployment.kubernetes.io/revision":                true,
}

// downstreamObject is what the syncer applies to the cluster for upstream
// object up: every top-level field but metadata and status, with name,
// labels and annotations of up plus the owner marker, in namespace ns.
// Everything the server owns (uid, resourceVersion, generation, timestamps,
// managed fields, owner references, finalizers) stays behind: those refer
// to the heaven. SpecHashAnnotation is the hash of the rest, so a hash
// comparison tells whether anything the syncer owns changed.
func downstreamObject(id identity, up *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	obj := map[string]any{}
	for k, v := range up.Object {
		if k == "metadata" || k == "status" {
			continue
		}
		obj[k] = runtime.DeepCopyJSONValue(v)
	}
	down := &unstructured.Unstructured{Object: obj}
	down.SetName(up.GetName())
	down.SetNamespace(ns)

	labels := map[string]string{}
	for k, v := range up.GetLabels() {
		labels[k] = v
	}
	for k, v := range id.ownerLabels() {
		labels[k] = v
	}
	down.SetLabels(labels)

	annotations := map[string]string{}
	for k, v := range up.GetAnnotations() {
		if !droppedAnnotations[k] {
			annotations[k] = v
		}
	}
	delete(annotations, SpecHashAnnotation)
	annotations[UpstreamNamespaceAnnotation] = up.GetNamespace()
	if g := up.GetGeneration(); g > 0 {
		annotations[UpstreamGenerationAnnotation] = strconv.FormatInt(g, 10)
	} else {
		delete(annotations, UpstreamGenerationAnnotation)
	}
	down.SetAnnotations(annotations)

	annotations[SpecHashAnnotation] = hashJSON(down.Object)
	down.SetAnnotations(annotations)
	return down
}

// hashJSON is a hex SHA-256 of v's JSON (map keys sorted by encoding/json).
func hashJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// upToDate reports whether downstream object down carries what desired
// would send.
func upToDate(down, desired *unstructured.Unstructured) bool {
	h := down.GetAnnotations()[SpecHashAnnotation]
	return h != "" && h == desired.GetAnnotations()[SpecHashAnnotation]
}

// upstreamStatus is the status to write to up from downstream object down,
// and whether there is one to write. status.observedGeneration is
// translated: the cluster's counts its own generations, so the heaven's
// object gets the heaven generation the cluster's spec was copied from once
// the cluster observed it, and keeps its previous value before.
func upstreamStatus(up, down *unstructured.Unstructured) (map[string]any, bool) {
	st, ok, _ := unstructured.NestedMap(down.Object, "status")
	if !ok {
		return nil, false
	}
	if observed, ok, _ := unstructured.NestedInt64(st, "observedGeneration"); ok {
		upGen, err := strconv.ParseInt(down.GetAnnotations()[UpstreamGenerationAnnotation], 10, 64)
		switch {
		case err == nil && observed >= down.GetGeneration():
			st["observedGeneration"] = upGen
		default:
			if prev, ok, _ := unstructured.NestedInt64(up.Object, "status", "observedGeneration"); ok {
				st["observedGeneration"] = prev
			} else {
				delete(st, "observedGeneration")
			}
		}
	}
	return st, true
}

// equalJSON compares two JSON-like values by their JSON form, so that int64
// and float64 numbers of the same value are equal.
func equalJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}
