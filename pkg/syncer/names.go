package syncer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// Labels and annotations the syncer puts on what it creates in the physical
// cluster. The two owner labels are the owner marker: the syncer of
// (heaven, target) only ever reads, changes or deletes downstream objects and
// namespaces carrying both, and its downstream informers select on them.
const (
	// HeavenLabel names the heaven an object or namespace was synced from.
	HeavenLabel = v1alpha1.HeavenLabel
	// SyncTargetLabel names the SyncTarget whose syncer created it.
	SyncTargetLabel = v1alpha1.SyncTargetLabel
	// UpstreamNamespaceLabel on a downstream namespace names the heaven's
	// namespace it stands for.
	UpstreamNamespaceLabel = "heaven.dev/upstream-namespace"

	// NamespaceLocatorAnnotation on a downstream namespace is the JSON
	// NamespaceLocator its name was derived from.
	NamespaceLocatorAnnotation = "heaven.dev/namespace-locator"
	// UpstreamNamespaceAnnotation on a downstream object names the heaven's
	// namespace of the object it copies.
	UpstreamNamespaceAnnotation = "heaven.dev/upstream-namespace"
	// SpecHashAnnotation is the hash of everything the syncer last sent
	// down for the object; equal hashes mean nothing to send.
	SpecHashAnnotation = "heaven.dev/spec-hash"
	// UpstreamGenerationAnnotation is the heaven object's
	// metadata.generation that the downstream spec was copied from; it
	// translates the cluster's status.observedGeneration back.
	UpstreamGenerationAnnotation = "heaven.dev/upstream-generation"
	// CRDSourceAnnotation on a CRD the syncer created in the heaven says
	// which target it came from and how (CRD or OpenAPI).
	CRDSourceAnnotation = "heaven.dev/crd-source"
	// CRDHashAnnotation on such a CRD is the hash of the spec the syncer
	// wrote, to update it when the cluster's type changes.
	CRDHashAnnotation = "heaven.dev/crd-hash"
)

// FieldManager is the syncer's field manager in the physical cluster.
const FieldManager = "heaven-syncer"

// NamespaceLocator is what a downstream namespace stands for.
type NamespaceLocator struct {
	Heaven     string `json:"heaven"`
	SyncTarget string `json:"syncTarget"`
	Namespace  string `json:"namespace"`
}

// DownstreamNamespace is the physical cluster's namespace for namespace ns
// of heaven synced by target: "heaven-" and a hash of the locator, so that
// the same namespace of two heavens (or of two targets of one heaven on the
// same cluster) never share a namespace.
func DownstreamNamespace(heaven, target, ns string) string {
	return NamespaceLocator{Heaven: heaven, SyncTarget: target, Namespace: ns}.Name()
}

// Name is the downstream namespace name of l.
func (l NamespaceLocator) Name() string {
	sum := sha256.Sum256(l.json())
	return "heaven-" + hex.EncodeToString(sum[:8])
}

func (l NamespaceLocator) json() []byte {
	b, _ := json.Marshal(l) // strings only: cannot fail
	return b
}

// identity is who a syncer is: which heaven and target.
type identity struct {
	heaven, target string
}

// ownerLabels are the owner marker.
func (id identity) ownerLabels() map[string]string {
	return map[string]string{HeavenLabel: id.heaven, SyncTargetLabel: id.target}
}

// ownerSelector selects what this syncer created downstream.
func (id identity) ownerSelector() string {
	return labels.SelectorFromSet(id.ownerLabels()).String()
}

// owns reports whether a downstream object carries this syncer's marker.
func (id identity) owns(obj *unstructured.Unstructured) bool {
	l := obj.GetLabels()
	return l[HeavenLabel] == id.heaven && l[SyncTargetLabel] == id.target
}

func (id identity) finalizer() string { return v1alpha1.SyncerFinalizer(id.target) }

// locator is the locator of upstream namespace ns.
func (id identity) locator(ns string) NamespaceLocator {
	return NamespaceLocator{Heaven: id.heaven, SyncTarget: id.target, Namespace: ns}
}

// selected reports whether an upstream object is labelled for this target.
func (id identity) selected(obj *unstructured.Unstructured) bool {
	return obj.GetLabels()[v1alpha1.ClusterLabel] == id.target
}

// hasFinalizer reports whether an upstream object carries this syncer's finalizer.
func (id identity) hasFinalizer(obj *unstructured.Unstructured) bool {
	for _, f := range obj.GetFinalizers() {
		if f == id.finalizer() {
			return true
		}
	}
	return false
}

// HeavenFromURL is the heaven a client of server talks to: the <name> of a
// server URL ending in /clusters/<name>.
func HeavenFromURL(server string) (string, error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != "clusters" || parts[len(parts)-1] == "" {
		return "", fmt.Errorf("server %q does not end in /clusters/<heaven>", server)
	}
	return parts[len(parts)-1], nil
}

// RootHeaven is the heaven holding SyncTargets.
const RootHeaven = "root"

// RootURL is the URL of the root heaven on the server of a heaven's URL:
// server with its final /clusters/<heaven> replaced by /clusters/root.
func RootURL(server string) (string, error) {
	if _, err := HeavenFromURL(server); err != nil {
		return "", err
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	path := strings.TrimRight(u.Path, "/")
	u.Path = path[:strings.LastIndex(path, "/")+1] + RootHeaven
	u.RawPath = ""
	return u.String(), nil
}

// parseGroupResource parses "resource.group".
func parseGroupResource(r string) schema.GroupResource { return schema.ParseGroupResource(r) }
