// Package scheme holds the runtime.Scheme that serves Kubernetes' built-in
// types without Kubernetes' internal API packages: each versioned k8s.io/api
// type also stands for the internal version of its group, and conversions
// between the two are identities.
package scheme

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	k8sappsv1 "k8s.io/kubernetes/pkg/apis/apps/v1"
	k8scoordinationv1 "k8s.io/kubernetes/pkg/apis/coordination/v1"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	k8seventsv1 "k8s.io/kubernetes/pkg/apis/events/v1"
)

var (
	// Scheme knows every built-in type at its version and at its group's
	// internal version.
	Scheme = runtime.NewScheme()
	// Codecs serializes the types in Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
	// ParameterCodec decodes query parameters into option types.
	ParameterCodec = runtime.NewParameterCodec(Scheme)
)

func init() {
	utilruntime.Must(AddToScheme(Scheme))
}

// groupTypes is one served group version and the kinds it holds.
type groupTypes struct {
	version schema.GroupVersion
	types   []runtime.Object
}

// groups lists every built-in group version; autoscaling/v1 only carries
// Scale, the body of deployments/scale.
var groups = []groupTypes{
	{corev1.SchemeGroupVersion, []runtime.Object{
		&corev1.Namespace{}, &corev1.NamespaceList{},
		&corev1.ConfigMap{}, &corev1.ConfigMapList{},
		&corev1.Secret{}, &corev1.SecretList{},
		&corev1.ServiceAccount{}, &corev1.ServiceAccountList{},
		&corev1.Event{}, &corev1.EventList{},
	}},
	{eventsv1.SchemeGroupVersion, []runtime.Object{&eventsv1.Event{}, &eventsv1.EventList{}}},
	{coordinationv1.SchemeGroupVersion, []runtime.Object{&coordinationv1.Lease{}, &coordinationv1.LeaseList{}}},
	{appsv1.SchemeGroupVersion, []runtime.Object{&appsv1.Deployment{}, &appsv1.DeploymentList{}}},
	{autoscalingv1.SchemeGroupVersion, []runtime.Object{&autoscalingv1.Scale{}}},
}

// optionsTypes are the metav1 request options; the apiserver decodes them at
// the group's external and internal versions.
func optionsTypes() []runtime.Object {
	return []runtime.Object{
		&metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{},
		&metav1.CreateOptions{}, &metav1.UpdateOptions{}, &metav1.PatchOptions{},
	}
}

// InternalVersion is the internal version of gv's group.
func InternalVersion(gv schema.GroupVersion) schema.GroupVersion {
	return schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}
}

// AddToScheme registers the built-in types, their internal versions,
// conversions, defaults and field label conversions in s.
func AddToScheme(s *runtime.Scheme) error {
	for _, g := range groups {
		// External first: the first registered kind is what ObjectKinds reports first.
		s.AddKnownTypes(g.version, g.types...)
		s.AddKnownTypes(InternalVersion(g.version), g.types...)
		s.AddKnownTypes(InternalVersion(g.version), optionsTypes()...)
		metav1.AddToGroupVersion(s, g.version)
		if err := addIdentityConversions(s, g.types); err != nil {
			return err
		}
		if err := s.SetVersionPriority(g.version); err != nil {
			return err
		}
	}
	// Kubernetes' own defaults of the versioned types, as kube-apiserver
	// applies them when it decodes a request.
	for _, register := range []func(*runtime.Scheme) error{
		k8scorev1.RegisterDefaults, k8sappsv1.RegisterDefaults, k8scoordinationv1.RegisterDefaults, k8seventsv1.RegisterDefaults,
	} {
		if err := register(s); err != nil {
			return err
		}
	}
	return addFieldLabelConversions(s)
}
