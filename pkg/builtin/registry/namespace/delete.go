package namespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
	"k8s.io/utils/ptr"
)

// Delete marks a namespace that still has spec finalizers Terminating and
// keeps it; only a namespace without spec finalizers is deleted.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	options = withUIDPrecondition(options, ns)
	if err := checkPreconditions(options.Preconditions, ns); err != nil {
		return nil, false, err
	}
	if len(ns.Spec.Finalizers) == 0 {
		return r.store.Delete(ctx, name, deleteValidation, options)
	}
	if ns.DeletionTimestamp != nil {
		return ns, false, nil
	}
	if deleteValidation != nil {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
	}
	return r.markTerminating(ctx, name, options)
}

// markTerminating sets the deletion timestamp and the Terminating phase.
func (r *REST) markTerminating(ctx context.Context, name string, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	key, err := r.store.KeyFunc(ctx, name)
	if err != nil {
		return nil, false, err
	}
	preconditions := &storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
	out := r.store.NewFunc()
	err = r.store.Storage.GuaranteedUpdate(ctx, key, out, false, preconditions,
		storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
			ns := existing.(*corev1.Namespace)
			if ns.DeletionTimestamp == nil {
				now := metav1.Now()
				ns.DeletionTimestamp = &now
				// A zero grace period lets the store delete it once finalized.
				ns.DeletionGracePeriodSeconds = ptr.To[int64](0)
			}
			ns.Status.Phase = corev1.NamespaceTerminating
			return ns, nil
		}),
		isDryRun(options), nil)
	if err != nil {
		err = storeerr.InterpretUpdateError(storeerr.InterpretGetError(err, r.store.DefaultQualifiedResource, name), r.store.DefaultQualifiedResource, name)
		return nil, false, err
	}
	return out, false, nil
}

// withUIDPrecondition pins the delete to the namespace read, so a namespace
// recreated meanwhile under the same name is not the one marked.
func withUIDPrecondition(options *metav1.DeleteOptions, ns *corev1.Namespace) *metav1.DeleteOptions {
	if options == nil {
		options = &metav1.DeleteOptions{}
	} else {
		options = options.DeepCopy()
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = ptr.To(ns.UID)
	}
	return options
}

func checkPreconditions(p *metav1.Preconditions, ns *corev1.Namespace) error {
	resource := corev1.Resource("namespaces")
	if *p.UID != ns.UID {
		return apierrors.NewConflict(resource, ns.Name, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, ns.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != ns.ResourceVersion {
		return apierrors.NewConflict(resource, ns.Name, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, ns.ResourceVersion))
	}
	return nil
}

func isDryRun(options *metav1.DeleteOptions) bool {
	return len(options.DryRun) > 0
}
