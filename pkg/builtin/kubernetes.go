package builtin

import (
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	utilproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controlplane"
	"k8s.io/kubernetes/pkg/controlplane/controller/defaultservicecidr"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
	admissionregistrationrest "k8s.io/kubernetes/pkg/registry/admissionregistration/rest"
	appsrest "k8s.io/kubernetes/pkg/registry/apps/rest"
	authenticationrest "k8s.io/kubernetes/pkg/registry/authentication/rest"
	authorizationrest "k8s.io/kubernetes/pkg/registry/authorization/rest"
	autoscalingrest "k8s.io/kubernetes/pkg/registry/autoscaling/rest"
	batchrest "k8s.io/kubernetes/pkg/registry/batch/rest"
	certificatesrest "k8s.io/kubernetes/pkg/registry/certificates/rest"
	coordinationrest "k8s.io/kubernetes/pkg/registry/coordination/rest"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
	discoveryrest "k8s.io/kubernetes/pkg/registry/discovery/rest"
	eventsrest "k8s.io/kubernetes/pkg/registry/events/rest"
	networkingrest "k8s.io/kubernetes/pkg/registry/networking/rest"
	noderest "k8s.io/kubernetes/pkg/registry/node/rest"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"
	resourcerest "k8s.io/kubernetes/pkg/registry/resource/rest"
	schedulingrest "k8s.io/kubernetes/pkg/registry/scheduling/rest"
	storagerest "k8s.io/kubernetes/pkg/registry/storage/rest"
	svmrest "k8s.io/kubernetes/pkg/registry/storagemigration/rest"
	netutils "k8s.io/utils/net"
)

// A kubernetes heaven serves what kube-apiserver serves, with its storage
// providers in its order (k8s.io/kubernetes/pkg/controlplane's
// StorageProviders), but:
//   - flow control and storage versions, which belong to the one process in
//     front of every heaven, not to a heaven;
//   - RBAC, which is the heaven's own (rbac.go);
//   - component statuses, which probe a scheduler and a controller manager
//     on the API server's own host.
//
// Services get their cluster IPs from ServiceCIDRs and IPAddresses (the only
// allocator of Kubernetes 1.37) and their node ports from the bitmap kept in
// Config.Ranges; the allocators' repair loops and the controller of the
// default ServiceCIDR run per heaven, as kube-apiserver runs them.

// Service ranges of every kubernetes heaven: kubeadm's cluster IP range, and
// kube-apiserver's node ports.
var (
	ServiceCIDR   = mustParseCIDR("10.96.0.0/12")
	NodePortRange = kubeoptions.DefaultServiceNodePortRange
)

// repairInterval is how often the allocators' repair loops check every
// Service, as in kube-apiserver.
const repairInterval = 3 * time.Minute

// kubernetesProviders are the storage providers of a kubernetes heaven.
func (c Config) kubernetesProviders(ttl time.Duration) ([]storageProvider, error) {
	if c.Loopback == nil || c.Informers == nil || c.Ranges == nil {
		return nil, fmt.Errorf("a kubernetes heaven needs a loopback client, informers and a range store")
	}
	kube, err := kubernetes.NewForConfig(c.Loopback)
	if err != nil {
		return nil, err
	}
	slices, err := utilproxy.NewEndpointSliceIndexerGetter(c.Informers.Discovery().V1().EndpointSlices())
	if err != nil {
		return nil, err
	}
	core, err := corerest.New(corerest.Config{
		GenericConfig: corerest.GenericConfig{
			StorageFactory:       c.Ranges,
			EventTTL:             ttl,
			ServiceAccountIssuer: c.ServiceAccountTokens,
			APIAudiences:         c.APIAudiences,
			LoopbackClientConfig: c.Loopback,
			Informers:            c.Informers,
		},
		// No kubelets answer a heaven: logs, exec and proxies to nodes
		// fail as they do for a node that is unreachable.
		Proxy: corerest.ProxyConfig{KubeletClientConfig: kubeletclient.KubeletClientConfig{
			Port: 10250, ReadOnlyPort: 10255, HTTPTimeout: 5 * time.Second,
			PreferredAddressTypes: []string{string(corev1.NodeHostName), string(corev1.NodeInternalDNS), string(corev1.NodeInternalIP), string(corev1.NodeExternalDNS), string(corev1.NodeExternalIP)},
		}},
		Services: corerest.ServicesConfig{
			ClusterIPRange:   ServiceCIDR,
			NodePortRange:    NodePortRange,
			IPRepairInterval: repairInterval,
		},
		EndpointSliceGetter: slices,
		Authorizer:          c.Authorizer,
	}, c.Authorizer)
	if err != nil {
		return nil, fmt.Errorf("core API: %w", err)
	}
	return []storageProvider{
		core,
		authenticationrest.RESTStorageProvider{Authenticator: c.Authenticator, APIAudiences: c.APIAudiences},
		authorizationrest.RESTStorageProvider{Authorizer: c.Authorizer, RuleResolver: c.RuleResolver},
		autoscalingrest.RESTStorageProvider{},
		batchrest.RESTStorageProvider{},
		certificatesrest.RESTStorageProvider{Authorizer: c.Authorizer},
		coordinationrest.RESTStorageProvider{},
		discoveryrest.StorageProvider{},
		networkingrest.RESTStorageProvider{},
		noderest.RESTStorageProvider{},
		policyrest.RESTStorageProvider{},
		rbacProvider{Authorizer: c.Authorizer, Policy: c.RBAC},
		schedulingrest.RESTStorageProvider{},
		storagerest.RESTStorageProvider{},
		svmrest.RESTStorageProvider{},
		appsrest.StorageProvider{},
		admissionregistrationrest.RESTStorageProvider{Authorizer: c.Authorizer, DiscoveryClient: c.Discovery},
		eventsrest.RESTStorageProvider{TTL: ttl},
		resourcerest.RESTStorageProvider{NamespaceClient: kube.CoreV1().Namespaces(), Authorizer: c.Authorizer},
	}, nil
}

// KubernetesResourceConfig is what a kubernetes heaven serves:
// kube-apiserver's defaults but the groups and resources named above.
func KubernetesResourceConfig() *serverstorage.ResourceConfig {
	c := controlplane.DefaultAPIResourceConfigSource()
	for gv, enabled := range c.GroupVersionConfigs {
		switch gv.Group {
		case "flowcontrol.apiserver.k8s.io", "internal.apiserver.k8s.io":
			if enabled {
				c.DisableVersions(gv)
			}
		}
	}
	c.DisableResources(corev1.SchemeGroupVersion.WithResource("componentstatuses"))
	return c
}

// addKubernetesHooks starts the controllers kube-apiserver runs for the
// kubernetes API beyond its storage providers' own hooks: the one of the
// default ServiceCIDR, which Services' cluster IPs come from. As in
// kube-apiserver, the heaven is not ready until that ServiceCIDR exists.
func (c Config) addKubernetesHooks(s *genericapiserver.GenericAPIServer) error {
	const name = "heaven-default-service-cidr"
	exists := make(chan struct{})
	if err := s.RegisterMuxAndDiscoveryCompleteSignal(name, exists); err != nil {
		return err
	}
	return s.AddPostStartHook(name, tolerantHook(name, func(hc genericapiserver.PostStartHookContext) error {
		defer close(exists)
		kube, err := kubernetes.NewForConfig(c.Loopback)
		if err != nil {
			return err
		}
		// Start returns once the ServiceCIDR exists (or the heaven
		// stops), and keeps it in the background.
		defaultservicecidr.NewController(ServiceCIDR, net.IPNet{}, kube).Start(hc.Context)
		return nil
	}))
}

// tolerantHook runs an upstream post-start hook without letting its error
// reach the generic server, which ends the process on it: a hook of a
// heaven that stops while it waits (the allocators' repair loops wait up to
// a minute for their first pass) must not take heaven-server down.
func tolerantHook(name string, hook genericapiserver.PostStartHookFunc) genericapiserver.PostStartHookFunc {
	return func(hc genericapiserver.PostStartHookContext) error {
		if err := hook(hc); err != nil && hc.Context.Err() == nil {
			klog.FromContext(hc.Context).Error(err, "Start-up step of a heaven failed", "hook", name)
		}
		return nil
	}
}

func mustParseCIDR(s string) net.IPNet {
	_, n, err := netutils.ParseCIDRSloppy(s)
	if err != nil {
		panic(err)
	}
	return *n
}
