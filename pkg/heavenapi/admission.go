package heavenapi

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	controlplaneadmission "k8s.io/kubernetes/pkg/controlplane/apiserver/admission"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
	certapproval "k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	certsigning "k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	certsubjectrestriction "k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"

	"github.com/heaven-dev/heaven/pkg/heavenapi/intern"
)

// AdmissionPlugins are the admission plugins every heaven runs: those
// kube-apiserver's generic control plane turns on
// (k8s.io/kubernetes/pkg/controlplane/apiserver/samples/generic/server),
// but DefaultTolerationSeconds, which only touches Pods.
var AdmissionPlugins = []string{
	lifecycle.PluginName,                 // NamespaceLifecycle
	serviceaccount.PluginName,            // ServiceAccount
	mutatingadmissionpolicy.PluginName,   // MutatingAdmissionPolicy
	mutatingwebhook.PluginName,           // MutatingAdmissionWebhook
	validatingadmissionpolicy.PluginName, // ValidatingAdmissionPolicy
	validatingwebhook.PluginName,         // ValidatingAdmissionWebhook
	resourcequota.PluginName,             // ResourceQuota
	certapproval.PluginName,              // CertificateApproval
	certsigning.PluginName,               // CertificateSigning
	ctbattest.PluginName,                 // ClusterTrustBundleAttest
	certsubjectrestriction.PluginName,    // CertificateSubjectRestriction
}

// applyAdmission sets gc's admission chain as kube-apiserver builds it
// (k8s.io/kubernetes/pkg/controlplane/apiserver.CreateConfig): kube's
// plugins, its initializers (webhook clients, quota evaluators), over the
// heaven's own informers and loopback clients. Webhooks named by Service
// are called at <service>.<namespace>.svc, as kube-apiserver does without
// its aggregator's endpoint routing.
//
// A kubernetes heaven runs the plugins kube-apiserver turns on by default.
func applyAdmission(gc *genericapiserver.RecommendedConfig, kube kubernetes.Interface, kubernetesAPI bool, resources *serverstorage.ResourceConfig) error {
	dyn, err := dynamic.NewForConfig(gc.LoopbackClientConfig)
	if err != nil {
		return err
	}
	opts := kubeoptions.NewAdmissionOptions()
	if !kubernetesAPI {
		opts.GenericAdmission.DefaultOffPlugins = sets.New(opts.GenericAdmission.RecommendedPluginOrder...).Delete(AdmissionPlugins...)
	}
	initializers, err := (&controlplaneadmission.Config{
		LoopbackClientConfig: gc.LoopbackClientConfig,
		ExternalInformers:    gc.SharedInformerFactory,
		APIResourceConfig:    resources,
	}).New(nil, nil, webhook.NewDefaultServiceResolver(), gc.TracerProvider)
	if err != nil {
		return err
	}
	initializers = append(initializers, intern.Webhooks{Err: func(err error) {
		klog.ErrorS(err, "Webhook admission keeps its own CEL environments")
	}})
	return opts.ApplyTo(&gc.Config, gc.SharedInformerFactory, kube, dyn, utilfeature.DefaultFeatureGate, gc.EffectiveVersion, initializers...)
}
