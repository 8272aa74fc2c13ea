package deployment

import (
	"context"
	"fmt"

	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"

	"github.com/heaven-dev/heaven/pkg/builtin/registry"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
)

// ScaleREST serves deployments/scale as autoscaling/v1 Scale, mapped onto
// spec.replicas and status.replicas/selector.
type ScaleREST struct{ store *genericregistry.Store }

var (
	_ rest.Patcher                  = &ScaleREST{}
	_ rest.GroupVersionKindProvider = &ScaleREST{}
)

func (r *ScaleREST) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy does nothing: the main resource owns the storage.
func (r *ScaleREST) Destroy() {}

// GroupVersionKind is autoscaling/v1 Scale in every apps version, as in Kubernetes.
func (r *ScaleREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

func (r *ScaleREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	return ScaleFromDeployment(obj.(*appsv1.Deployment))
}

func (r *ScaleREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name, &scaleUpdatedObjectInfo{name: name, scaleInfo: objInfo},
		toScaleCreateValidation(createValidation), toScaleUpdateValidation(updateValidation), false, options)
	if err != nil {
		return nil, false, err
	}
	scale, err := ScaleFromDeployment(obj.(*appsv1.Deployment))
	return scale, false, err
}

// ScaleFromDeployment returns the Scale view of d.
func ScaleFromDeployment(d *appsv1.Deployment) (*autoscalingv1.Scale, error) {
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s selector: %w", d.Namespace, d.Name, err)
	}
	var replicas int32
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              d.Name,
			Namespace:         d.Namespace,
			UID:               d.UID,
			ResourceVersion:   d.ResourceVersion,
			CreationTimestamp: d.CreationTimestamp,
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: replicas},
		Status: autoscalingv1.ScaleStatus{Replicas: d.Status.Replicas, Selector: selector.String()},
	}, nil
}

// ApplyScale writes the desired replicas of scale into a copy of d; a
// resourceVersion on the scale becomes the update's precondition.
func ApplyScale(d *appsv1.Deployment, scale *autoscalingv1.Scale) (*appsv1.Deployment, error) {
	if errs := registry.Validate(scale, autoscalingvalidation.ValidateScale); len(errs) > 0 {
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), scale.Name, errs)
	}
	d = d.DeepCopy()
	if scale.ResourceVersion != "" {
		d.ResourceVersion = scale.ResourceVersion
	}
	d.Spec.Replicas = &scale.Spec.Replicas
	return d, nil
}

// scaleUpdatedObjectInfo turns the Scale a client sent into the deployment
// the store writes.
type scaleUpdatedObjectInfo struct {
	name      string
	scaleInfo rest.UpdatedObjectInfo
}

func (i *scaleUpdatedObjectInfo) Preconditions() *metav1.Preconditions {
	return i.scaleInfo.Preconditions()
}

func (i *scaleUpdatedObjectInfo) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	d, ok := oldObj.(*appsv1.Deployment)
	if !ok || d == nil {
		return nil, apierrors.NewNotFound(appsv1.Resource("deployments/scale"), i.name)
	}
	oldScale, err := ScaleFromDeployment(d)
	if err != nil {
		return nil, err
	}
	obj, err := i.scaleInfo.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	scale, ok := obj.(*autoscalingv1.Scale)
	if !ok || scale == nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected a Scale, got %T", obj))
	}
	return ApplyScale(d, scale)
}

// Admission sees Scales on this subresource, not deployments.
func toScaleCreateValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		scale, err := ScaleFromDeployment(obj.(*appsv1.Deployment))
		if err != nil {
			return err
		}
		return f(ctx, scale)
	}
}

func toScaleUpdateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		scale, err := ScaleFromDeployment(obj.(*appsv1.Deployment))
		if err != nil {
			return err
		}
		oldScale, err := ScaleFromDeployment(old.(*appsv1.Deployment))
		if err != nil {
			return err
		}
		return f(ctx, scale, oldScale)
	}
}
