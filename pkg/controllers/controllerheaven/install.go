package controllerheaven

import (
	"context"
	"encoding/base64"
	"fmt"
	"path"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/synctarget"
	"github.com/heaven-dev/heaven/pkg/syncer/install"
)

// What the controller installs in a physical cluster.
const (
	// SecretName holds the kubeconfig of the controller's heaven.
	SecretName = "heaven-kubeconfig"
	// KubeconfigKey is its key in the Secret.
	KubeconfigKey = "kubeconfig"
	// volumeName is the Secret's volume in the pod.
	volumeName = "heaven-kubeconfig"
)

var (
	namespacesResource  = corev1.SchemeGroupVersion.WithResource("namespaces")
	secretsResource     = corev1.SchemeGroupVersion.WithResource("secrets")
	deploymentsResource = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// Namespace is where a ControllerHeaven's controller runs in its cluster.
func Namespace(name string) string { return "heaven-ctrl-" + name }

// install applies the namespace, the kubeconfig Secret and the Deployment
// in the SyncTarget's cluster; rotateAt is when the credential is due.
func (c *Controller) install(ctx context.Context, ch *v1alpha1.ControllerHeaven, heaven string) (rotateAt time.Time, err error) {
	cluster, err := c.cluster(ctx, ch)
	if err != nil {
		return time.Time{}, err
	}
	ns := Namespace(ch.Name)
	kubeconfig, rotateAt, err := c.credential(ctx, cluster, ch, heaven)
	if err != nil {
		return time.Time{}, err
	}
	labels := map[string]string{v1alpha1.ControllerHeavenLabel: ch.Name}
	objs := []struct {
		gvr schema.GroupVersionResource
		obj runtime.Object
	}{
		{namespacesResource, &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}},
		{secretsResource, &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: ns, Labels: labels},
			Data:       map[string][]byte{KubeconfigKey: kubeconfig}}},
		{deploymentsResource, Deployment(ch)},
	}
	for _, o := range objs {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.obj)
		if err != nil {
			return time.Time{}, err
		}
		delete(raw, "status")
		u := &unstructured.Unstructured{Object: raw}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
		if _, err := cluster.Resource(o.gvr).Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u,
			metav1.ApplyOptions{FieldManager: "heaven-server-" + ControllerName, Force: true}); err != nil {
			return time.Time{}, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return rotateAt, nil
}

// uninstall deletes the controller's namespace, and with it everything
// installed, if its cluster can still be reached through its SyncTarget.
func (c *Controller) uninstall(ctx context.Context, ch *v1alpha1.ControllerHeaven) error {
	cluster, err := c.cluster(ctx, ch)
	if err != nil {
		// No SyncTarget or kubeconfig any more: nothing to reach.
		return nil
	}
	err = cluster.Resource(namespacesResource).Delete(ctx, Namespace(ch.Name), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("uninstalling from SyncTarget %s's cluster: %w", ch.Spec.SyncTarget, err)
	}
	return nil
}

// cluster is a client of the SyncTarget's cluster, with the kubeconfig of
// its Secret.
func (c *Controller) cluster(ctx context.Context, ch *v1alpha1.ControllerHeaven) (dynamic.Interface, error) {
	st, err := c.targets.Get(ch.Spec.SyncTarget)
	if err != nil {
		return nil, fmt.Errorf("SyncTarget %s: %w", ch.Spec.SyncTarget, err)
	}
	ref := st.Spec.KubeconfigSecretRef
	if ref == nil {
		return nil, fmt.Errorf("SyncTarget %s has no spec.kubeconfigSecretRef: heaven-server can't reach its cluster", st.Name)
	}
	secret, err := c.rootKube.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("SyncTarget %s's kubeconfig Secret %s/%s: %w", st.Name, ref.Namespace, ref.Name, err)
	}
	key := ref.Key
	if key == "" {
		key = v1alpha1.DefaultKubeconfigKey
	}
	kubeconfig := secret.Data[key]
	if len(kubeconfig) == 0 {
		return nil, fmt.Errorf("SyncTarget %s's kubeconfig Secret %s/%s has no key %q", st.Name, ref.Namespace, ref.Name, key)
	}
	return c.deps.Connect(kubeconfig)
}

// credential is the kubeconfig of the controller's heaven: the installed
// one while its certificate is good for half its life, else a new one.
func (c *Controller) credential(ctx context.Context, cluster dynamic.Interface, ch *v1alpha1.ControllerHeaven, heaven string) ([]byte, time.Time, error) {
	user := v1alpha1.ControllerUser(ch.Name)
	var old []byte
	secret, err := cluster.Resource(secretsResource).Namespace(Namespace(ch.Name)).Get(ctx, SecretName, metav1.GetOptions{})
	switch {
	case err == nil:
		encoded, _, _ := unstructured.NestedString(secret.Object, "data", KubeconfigKey)
		old, _ = base64.StdEncoding.DecodeString(encoded)
	case !apierrors.IsNotFound(err):
		return nil, time.Time{}, fmt.Errorf("reading the installed Secret: %w", err)
	}
	certPEM, keyPEM, rotateAt, ok := synctarget.ReusableCredential(old, user, v1alpha1.ControllerGroup, c.deps.CAPool, c.now())
	if ok {
		if cred, err := install.ParseKubeconfig(old); err == nil && cred.Server == c.deps.ServerURL+"/clusters/"+heaven {
			return old, rotateAt, nil
		}
	}
	if !ok {
		if certPEM, keyPEM, err = c.deps.Issue(user, []string{v1alpha1.ControllerGroup}, c.deps.CredentialValidity); err != nil {
			return nil, time.Time{}, fmt.Errorf("issuing the controller's certificate: %w", err)
		}
		if rotateAt, err = synctarget.HalfLife(certPEM); err != nil {
			return nil, time.Time{}, err
		}
	}
	kubeconfig, err := install.Kubeconfig(c.deps.ServerURL, heaven, c.deps.CAPEM, certPEM, keyPEM)
	return kubeconfig, rotateAt, err
}

// Deployment is the controller's Deployment: its pod template with the
// kubeconfig of its heaven mounted in every container and named by
// $KUBECONFIG.
func Deployment(ch *v1alpha1.ControllerHeaven) *appsv1.Deployment {
	selector := map[string]string{v1alpha1.ControllerHeavenLabel: ch.Name}
	tmpl := *ch.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	for k, v := range selector {
		tmpl.Labels[k] = v
	}
	tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: volumeName,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: SecretName}}})
	mount := func(cs []corev1.Container) {
		for i := range cs {
			cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: volumeName, MountPath: path.Dir(v1alpha1.ControllerKubeconfigPath), ReadOnly: true})
			cs[i].Env = append(cs[i].Env, corev1.EnvVar{Name: "KUBECONFIG", Value: v1alpha1.ControllerKubeconfigPath})
		}
	}
	mount(tmpl.Spec.InitContainers)
	mount(tmpl.Spec.Containers)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: ch.Name, Namespace: Namespace(ch.Name), Labels: selector},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(ch.Spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
		},
	}
}
