// Package install generates what installs a syncer in a physical cluster:
// a Namespace, a ServiceAccount, a ClusterRole and ClusterRoleBinding
// limited to what the syncer syncs, a Secret holding the syncer's
// kubeconfig for its heaven, and a Deployment running cmd/syncer. The
// cluster controller (pkg/controllers/synctarget) applies these objects
// and `heaven-server syncer-manifests` prints them for kubectl apply.
package install

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// Names and paths of what is installed.
const (
	// NamespacePrefix starts the name of the syncer's namespace (and of
	// its ClusterRole and ClusterRoleBinding): heaven-syncer-<target>.
	NamespacePrefix = "heaven-syncer-"
	// ServiceAccountName, SecretName and DeploymentName are the names of
	// the namespaced objects.
	ServiceAccountName = "syncer"
	SecretName         = "heaven-kubeconfig"
	DeploymentName     = "syncer"
	// KubeconfigKey is the key of the Secret holding the kubeconfig.
	KubeconfigKey = "kubeconfig"
	// KubeconfigDir is where the Secret is mounted in the syncer's pod.
	KubeconfigDir = "/etc/heaven-syncer"
	// MetricsPort serves /healthz, /readyz and /metrics in the pod.
	MetricsPort = 8080
	// DefaultImage is the syncer image unless told otherwise (`make
	// image` builds it).
	DefaultImage = "heaven-syncer:latest"

	// NameLabel and InstanceLabel are on every installed object.
	NameLabel     = "app.kubernetes.io/name"
	InstanceLabel = "app.kubernetes.io/instance"
	// KubeconfigHashAnnotation on the pod template changes with the
	// kubeconfig, so that a new credential restarts the syncer.
	KubeconfigHashAnnotation = "heaven.dev/kubeconfig-hash"
)

// Params say what to install.
type Params struct {
	// SyncTarget is the SyncTarget's name, Heaven the heaven it syncs.
	SyncTarget, Heaven string
	// Resources the syncer syncs (resource.group); the ClusterRole grants
	// exactly these (and what every syncer needs).
	Resources []string
	// Image of the syncer; DefaultImage when empty.
	Image string
	// Kubeconfig is the syncer's kubeconfig for its heaven (Kubeconfig
	// builds one).
	Kubeconfig []byte
}

// Manifests are the objects that install one syncer.
type Manifests struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Secret             *corev1.Secret
	Deployment         *appsv1.Deployment
}

// Verbs the syncer needs on the objects of a synced resource: its
// informers list and watch, server-side apply creates and patches, and
// copies are deleted.
var objectVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// Verbs on namespaces: the syncer creates the namespaces it maps heaven
// namespaces to and deletes them when they are no longer needed. RBAC
// cannot narrow this to its own namespaces; the syncer never touches a
// namespace without its owner labels.
var namespaceVerbs = []string{"get", "list", "watch", "create", "delete"}

// discoveryURLs are what type syncing reads besides CRDs: discovery and
// the OpenAPI v3 documents of built-in types.
var discoveryURLs = []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version"}

// Generate builds the manifests.
func Generate(p Params) (*Manifests, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Image == "" {
		p.Image = DefaultImage
	}
	p.Resources = dedupe(p.Resources)
	ns := Namespace(p.SyncTarget)
	labels := Labels(p.SyncTarget)
	meta := func(name, namespace string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: copyLabels(labels)}
	}
	nsMeta := meta(ns, "")
	nsMeta.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	m := &Manifests{
		Namespace: &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: nsMeta,
		},
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: meta(ServiceAccountName, ns),
		},
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: meta(ns, ""),
			Rules:      Rules(p.Resources),
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(ns, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ServiceAccountName, Namespace: ns}},
		},
		Secret: &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta(SecretName, ns),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{KubeconfigKey: p.Kubeconfig},
		},
		Deployment: deployment(p, meta(DeploymentName, ns), labels),
	}
	return m, nil
}

func (p Params) validate() error {
	var errs []string
	if msgs := validation.IsDNS1123Label(p.SyncTarget); len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("sync target %q: %s", p.SyncTarget, strings.Join(msgs, "; ")))
	}
	if msgs := validation.IsDNS1123Label(p.Heaven); len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("heaven %q: %s", p.Heaven, strings.Join(msgs, "; ")))
	}
	for _, r := range p.Resources {
		if err := v1alpha1.ValidateResource(r); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(p.Kubeconfig) == 0 {
		errs = append(errs, "no kubeconfig for the heaven")
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot install the syncer: %s", strings.Join(errs, ", "))
	}
	return nil
}

// Namespace is the syncer's namespace, heaven-syncer-<target>; a target
// name too long for that is cut and completed with a hash of it. The
// ClusterRole and ClusterRoleBinding have the same name.
func Namespace(target string) string {
	name := NamespacePrefix + target
	if len(name) <= validation.DNS1123LabelMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(target))
	hash := hex.EncodeToString(sum[:4])
	keep := validation.DNS1123LabelMaxLength - len(NamespacePrefix) - len(hash) - 1
	return NamespacePrefix + strings.TrimRight(target[:keep], "-") + "-" + hash
}

// Labels are on every object installed for target.
func Labels(target string) map[string]string {
	return map[string]string{NameLabel: "heaven-syncer", InstanceLabel: target}
}

// Rules are the ClusterRole's rules for a syncer of resources: the
// resources' objects in every namespace, namespaces, reading CRDs, and
// discovery and OpenAPI.
func Rules(resources []string) []rbacv1.PolicyRule {
	byGroup := map[string]map[string]bool{}
	for _, r := range resources {
		gr := schema.ParseGroupResource(r)
		if byGroup[gr.Group] == nil {
			byGroup[gr.Group] = map[string]bool{}
		}
		byGroup[gr.Group][gr.Resource] = true
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var rules []rbacv1.PolicyRule
	for _, g := range groups {
		names := make([]string, 0, len(byGroup[g]))
		for r := range byGroup[g] {
			names = append(names, r)
		}
		sort.Strings(names)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: names, Verbs: objectVerbs})
	}
	return append(rules,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: namespaceVerbs},
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{NonResourceURLs: discoveryURLs, Verbs: []string{"get"}},
	)
}

// Args are the syncer's arguments in the Deployment.
func Args(p Params) []string {
	args := []string{
		"--sync-target=" + p.SyncTarget,
		"--heaven=" + p.Heaven,
		"--upstream-kubeconfig=" + KubeconfigDir + "/" + KubeconfigKey,
		fmt.Sprintf("--metrics-bind-address=:%d", MetricsPort),
	}
	if len(p.Resources) > 0 {
		args = append(args, "--resources="+strings.Join(p.Resources, ","))
	}
	return args
}

func deployment(p Params, meta metav1.ObjectMeta, labels map[string]string) *appsv1.Deployment {
	sum := sha256.Sum256(p.Kubeconfig)
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString("metrics"),
		}}, PeriodSeconds: 10}
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
			// Never two syncers of one target at once.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      copyLabels(labels),
					Annotations: map[string]string{KubeconfigHashAnnotation: hex.EncodeToString(sum[:8])},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: ServiceAccountName,
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptr.To(true),
						RunAsUser:      ptr.To[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:  "syncer",
						Image: p.Image,
						// A locally built image (kind load) is never pulled.
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            Args(p),
						Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort}},
						LivenessProbe:   probe("/livez"),
						ReadinessProbe:  probe("/readyz"),
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
						}},
						VolumeMounts: []corev1.VolumeMount{{Name: "kubeconfig", MountPath: KubeconfigDir, ReadOnly: true}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: []corev1.Volume{{Name: "kubeconfig", VolumeSource: corev1.VolumeSource{
						Secret: &corev1.SecretVolumeSource{SecretName: SecretName},
					}}},
				},
			},
		},
	}
}

// dedupe drops repeated entries, keeping the first of each.
func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
