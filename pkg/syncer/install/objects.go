package install

import (
	"bytes"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Object is one manifest with the resource that serves it.
type Object struct {
	Resource schema.GroupVersionResource
	*unstructured.Unstructured
}

// Resources of the installed kinds.
var (
	NamespacesResource          = corev1.SchemeGroupVersion.WithResource("namespaces")
	ServiceAccountsResource     = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	SecretsResource             = corev1.SchemeGroupVersion.WithResource("secrets")
	ClusterRolesResource        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	ClusterRoleBindingsResource = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
	DeploymentsResource         = appsv1.SchemeGroupVersion.WithResource("deployments")
)

// Objects are the manifests in the order to apply them (a namespace
// before what is in it, the role before its binding), as unstructured
// objects without empty fields or status, ready for server-side apply.
func (m *Manifests) Objects() ([]Object, error) {
	typed := []struct {
		gvr schema.GroupVersionResource
		obj runtime.Object
	}{
		{NamespacesResource, m.Namespace},
		{ClusterRolesResource, m.ClusterRole},
		{ClusterRoleBindingsResource, m.ClusterRoleBinding},
		{ServiceAccountsResource, m.ServiceAccount},
		{SecretsResource, m.Secret},
		{DeploymentsResource, m.Deployment},
	}
	out := make([]Object, 0, len(typed))
	for _, t := range typed {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t.obj)
		if err != nil {
			return nil, err
		}
		delete(raw, "status")
		pruneNil(raw)
		out = append(out, Object{Resource: t.gvr, Unstructured: &unstructured.Unstructured{Object: raw}})
	}
	return out, nil
}

// pruneNil removes null fields (such as metadata.creationTimestamp) that
// a typed object carries but a manifest does not.
func pruneNil(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			pruneNil(v)
		case []any:
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					pruneNil(im)
				}
			}
		}
	}
}

// YAML is the manifests as one YAML stream for kubectl apply.
func (m *Manifests) YAML() ([]byte, error) {
	objs, err := m.Objects()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for i, o := range objs {
		if i > 0 {
			b.WriteString("---\n")
		}
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}

// Installed names what an install of target consists of in the order to
// delete it: the namespace (with the namespaced objects in it), then the
// binding and the role.
func Installed(target string) []Object {
	name := Namespace(target)
	ref := func(gvr schema.GroupVersionResource, kind string) Object {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(gvr.GroupVersion().String())
		u.SetKind(kind)
		u.SetName(name)
		return Object{Resource: gvr, Unstructured: u}
	}
	return []Object{
		ref(NamespacesResource, "Namespace"),
		ref(ClusterRoleBindingsResource, "ClusterRoleBinding"),
		ref(ClusterRolesResource, "ClusterRole"),
	}
}

// Kubeconfig is a syncer's kubeconfig for heaven on the heaven-server at
// server (https://host:port), trusting caPEM, with a client certificate.
func Kubeconfig(server, heaven string, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["heaven"] = &clientcmdapi.Cluster{Server: server + "/clusters/" + heaven, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["syncer"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["heaven"] = &clientcmdapi.Context{Cluster: "heaven", AuthInfo: "syncer"}
	cfg.CurrentContext = "heaven"
	return clientcmd.Write(*cfg)
}

// Credential is what a syncer kubeconfig (from Kubeconfig) holds.
type Credential struct {
	Server                 string
	CAPEM, CertPEM, KeyPEM []byte
}

// ParseKubeconfig reads back the current context's server and credential
// of a kubeconfig.
func ParseKubeconfig(data []byte) (*Credential, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil {
		return nil, fmt.Errorf("kubeconfig has no current context")
	}
	cluster, auth := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	if cluster == nil || auth == nil {
		return nil, fmt.Errorf("kubeconfig context %q lacks its cluster or user", cfg.CurrentContext)
	}
	return &Credential{Server: cluster.Server, CAPEM: cluster.CertificateAuthorityData,
		CertPEM: auth.ClientCertificateData, KeyPEM: auth.ClientKeyData}, nil
}
