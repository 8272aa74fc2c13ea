package builtin

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	serveroptions "k8s.io/apiserver/pkg/server/options"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/kubeapiserver"

	// Kubernetes' internal types, conversions and defaults of every group
	// served: what the REST storage providers work in.
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
)

// Resource is one built-in resource a heaven keeps in storage (the review
// APIs keep nothing and are not listed).
type Resource struct {
	GroupResource schema.GroupResource
	Kind          string
	Namespaced    bool
}

// Resources lists every built-in resource a generic or a kubernetes heaven
// stores, each once (the events of events.k8s.io are stored as core Events,
// as in kube-apiserver). TestResourcesAreWhatIsServed holds them to what the
// providers install.
func Resources(kubernetes bool) []Resource {
	if kubernetes {
		return kubernetesResources
	}
	return genericResources
}

var genericResources = []Resource{
	{schema.GroupResource{Resource: "namespaces"}, "Namespace", false},
	{schema.GroupResource{Resource: "configmaps"}, "ConfigMap", true},
	{schema.GroupResource{Resource: "secrets"}, "Secret", true},
	{schema.GroupResource{Resource: "serviceaccounts"}, "ServiceAccount", true},
	{schema.GroupResource{Resource: "events"}, "Event", true},
	{schema.GroupResource{Resource: "resourcequotas"}, "ResourceQuota", true},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, "ValidatingWebhookConfiguration", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, "MutatingWebhookConfiguration", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, "ValidatingAdmissionPolicy", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}, "ValidatingAdmissionPolicyBinding", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}, "MutatingAdmissionPolicy", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}, "MutatingAdmissionPolicyBinding", false},
	{schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "CertificateSigningRequest", false},
	{schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, "ClusterTrustBundle", false},
	{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "Lease", true},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "Role", true},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, "RoleBinding", true},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "ClusterRole", false},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, "ClusterRoleBinding", false},
	{schema.GroupResource{Group: "apps", Resource: "deployments"}, "Deployment", true},
}

// storageFactory encodes objects as kube-apiserver does: JSON of each
// resource's storage version, read back into Kubernetes' internal types.
var storageFactory = sync.OnceValues(func() (*serverstorage.DefaultStorageFactory, error) {
	ev := basecompatibility.NewEffectiveVersionFromString(KubernetesVersion, "", "")
	c := kubeapiserver.NewStorageFactoryConfigEffectiveVersion(ev)
	// What a kubernetes heaven serves includes what a generic one does.
	c.APIResourceConfig = KubernetesResourceConfig()
	etcd := serveroptions.NewEtcdOptions(storagebackend.NewDefaultConfig("/registry", nil))
	etcd.DefaultStorageMediaType = runtime.ContentTypeJSON
	return c.Complete(etcd).New()
})

// KubernetesVersion is the version of Kubernetes every heaven serves.
const KubernetesVersion = "1.37"

// StorageCodec returns the storage codec of a built-in resource and the
// versioner naming its storage version.
func StorageCodec(gr schema.GroupResource, example runtime.Object) (runtime.Codec, runtime.GroupVersioner, error) {
	f, err := storageFactory()
	if err != nil {
		return nil, nil, err
	}
	c, err := f.NewConfig(gr, example)
	if err != nil {
		return nil, nil, err
	}
	return c.Codec, c.EncodeVersioner, nil
}

// KubeAPIServerPrefix is where kube-apiserver keeps the objects of a
// built-in resource in etcd, below its --etcd-prefix: mostly the resource's
// name ("pods", "deployments", "roles"), some older ones elsewhere
// ("services/specs", "minions").
func KubeAPIServerPrefix(gr schema.GroupResource) (string, error) {
	f, err := storageFactory()
	if err != nil {
		return "", err
	}
	return f.ResourcePrefix(gr), nil
}

// NewStored returns a new object of the Go type a resource is stored as
// (its storage version, from k8s.io/api), to decode stored JSON into.
func NewStored(r Resource) (runtime.Object, error) {
	example, err := legacyscheme.Scheme.New(schema.GroupVersionKind{Group: r.GroupResource.Group, Version: runtime.APIVersionInternal, Kind: r.Kind})
	if err != nil {
		return nil, err
	}
	_, versioner, err := StorageCodec(r.GroupResource, example)
	if err != nil {
		return nil, err
	}
	gvk, ok := versioner.KindForGroupVersionKinds([]schema.GroupVersionKind{{Group: r.GroupResource.Group, Kind: r.Kind}})
	if !ok {
		return nil, fmt.Errorf("no storage version of %s", r.GroupResource)
	}
	return legacyscheme.Scheme.New(gvk)
}

// kubernetesResources are kube-apiserver's, but those kubernetes.go leaves
// out.
var kubernetesResources = []Resource{
	{schema.GroupResource{Group: "", Resource: "podtemplates"}, "PodTemplate", true},
	{schema.GroupResource{Group: "", Resource: "persistentvolumes"}, "PersistentVolume", false},
	{schema.GroupResource{Group: "", Resource: "resourcequotas"}, "ResourceQuota", true},
	{schema.GroupResource{Group: "", Resource: "serviceaccounts"}, "ServiceAccount", true},
	{schema.GroupResource{Group: "", Resource: "pods"}, "Pod", true},
	{schema.GroupResource{Group: "", Resource: "replicationcontrollers"}, "ReplicationController", true},
	{schema.GroupResource{Group: "", Resource: "endpoints"}, "Endpoints", true},
	{schema.GroupResource{Group: "", Resource: "services"}, "Service", true},
	{schema.GroupResource{Group: "", Resource: "nodes"}, "Node", false},
	{schema.GroupResource{Group: "", Resource: "secrets"}, "Secret", true},
	{schema.GroupResource{Group: "", Resource: "limitranges"}, "LimitRange", true},
	{schema.GroupResource{Group: "", Resource: "persistentvolumeclaims"}, "PersistentVolumeClaim", true},
	{schema.GroupResource{Group: "", Resource: "configmaps"}, "ConfigMap", true},
	{schema.GroupResource{Group: "", Resource: "events"}, "Event", true},
	{schema.GroupResource{Group: "", Resource: "namespaces"}, "Namespace", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}, "ValidatingAdmissionPolicy", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}, "MutatingAdmissionPolicyBinding", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}, "MutatingWebhookConfiguration", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}, "ValidatingAdmissionPolicyBinding", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}, "ValidatingWebhookConfiguration", false},
	{schema.GroupResource{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}, "MutatingAdmissionPolicy", false},
	{schema.GroupResource{Group: "apps", Resource: "controllerrevisions"}, "ControllerRevision", true},
	{schema.GroupResource{Group: "apps", Resource: "daemonsets"}, "DaemonSet", true},
	{schema.GroupResource{Group: "apps", Resource: "deployments"}, "Deployment", true},
	{schema.GroupResource{Group: "apps", Resource: "replicasets"}, "ReplicaSet", true},
	{schema.GroupResource{Group: "apps", Resource: "statefulsets"}, "StatefulSet", true},
	{schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "HorizontalPodAutoscaler", true},
	{schema.GroupResource{Group: "batch", Resource: "jobs"}, "Job", true},
	{schema.GroupResource{Group: "batch", Resource: "cronjobs"}, "CronJob", true},
	{schema.GroupResource{Group: "certificates.k8s.io", Resource: "podcertificaterequests"}, "PodCertificateRequest", true},
	{schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}, "CertificateSigningRequest", false},
	{schema.GroupResource{Group: "certificates.k8s.io", Resource: "clustertrustbundles"}, "ClusterTrustBundle", false},
	{schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "Lease", true},
	{schema.GroupResource{Group: "discovery.k8s.io", Resource: "endpointslices"}, "EndpointSlice", true},
	{schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, "NetworkPolicy", true},
	{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingressclasses"}, "IngressClass", false},
	{schema.GroupResource{Group: "networking.k8s.io", Resource: "ingresses"}, "Ingress", true},
	{schema.GroupResource{Group: "networking.k8s.io", Resource: "ipaddresses"}, "IPAddress", false},
	{schema.GroupResource{Group: "networking.k8s.io", Resource: "servicecidrs"}, "ServiceCIDR", false},
	{schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}, "RuntimeClass", false},
	{schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "PodDisruptionBudget", true},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, "ClusterRole", false},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}, "RoleBinding", true},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "roles"}, "Role", true},
	{schema.GroupResource{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}, "ClusterRoleBinding", false},
	{schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, "DeviceClass", false},
	{schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaims"}, "ResourceClaim", true},
	{schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceclaimtemplates"}, "ResourceClaimTemplate", true},
	{schema.GroupResource{Group: "resource.k8s.io", Resource: "resourceslices"}, "ResourceSlice", false},
	{schema.GroupResource{Group: "resource.k8s.io", Resource: "devicetaintrules"}, "DeviceTaintRule", false},
	{schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}, "PriorityClass", false},
	{schema.GroupResource{Group: "storage.k8s.io", Resource: "csidrivers"}, "CSIDriver", false},
	{schema.GroupResource{Group: "storage.k8s.io", Resource: "csistoragecapacities"}, "CSIStorageCapacity", true},
	{schema.GroupResource{Group: "storage.k8s.io", Resource: "storageclasses"}, "StorageClass", false},
	{schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattributesclasses"}, "VolumeAttributesClass", false},
	{schema.GroupResource{Group: "storage.k8s.io", Resource: "csinodes"}, "CSINode", false},
	{schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}, "VolumeAttachment", false},
	{schema.GroupResource{Group: "storagemigration.k8s.io", Resource: "storageversionmigrations"}, "StorageVersionMigration", false},
}
