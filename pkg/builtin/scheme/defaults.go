package scheme

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// addDefaultingFuncs registers the defaults clients rely on Kubernetes to fill in.
func addDefaultingFuncs(s *runtime.Scheme) {
	s.AddTypeDefaultingFunc(&appsv1.Deployment{}, func(o interface{}) { SetDefaultsDeployment(o.(*appsv1.Deployment)) })
	s.AddTypeDefaultingFunc(&appsv1.DeploymentList{}, func(o interface{}) {
		for i := range o.(*appsv1.DeploymentList).Items {
			SetDefaultsDeployment(&o.(*appsv1.DeploymentList).Items[i])
		}
	})
	s.AddTypeDefaultingFunc(&corev1.Secret{}, func(o interface{}) { SetDefaultsSecret(o.(*corev1.Secret)) })
	s.AddTypeDefaultingFunc(&corev1.Namespace{}, func(o interface{}) { SetDefaultsNamespace(o.(*corev1.Namespace)) })
}

// SetDefaultsDeployment mirrors apps/v1 defaulting.
func SetDefaultsDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptr.To[int32](1)
	}
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if d.Spec.Strategy.RollingUpdate == nil {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		quarter := intstr.FromString("25%")
		if d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil {
			d.Spec.Strategy.RollingUpdate.MaxUnavailable = &quarter
		}
		if d.Spec.Strategy.RollingUpdate.MaxSurge == nil {
			d.Spec.Strategy.RollingUpdate.MaxSurge = ptr.To(quarter)
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
	}
	SetDefaultsPodSpec(&d.Spec.Template.Spec)
}

// SetDefaultsSecret makes an untyped secret Opaque.
func SetDefaultsSecret(s *corev1.Secret) {
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
}

// SetDefaultsNamespace starts a namespace Active.
func SetDefaultsNamespace(ns *corev1.Namespace) {
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}
