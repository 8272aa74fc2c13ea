package install

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

func testParams(t *testing.T) Params {
	kubeconfig, err := Kubeconfig("https://heaven.example:6443", "team-a", []byte("CA"), []byte("CERT"), []byte("KEY"))
	require.NoError(t, err)
	return Params{
		SyncTarget: "east", Heaven: "team-a",
		Resources:  []string{"deployments.apps", "configmaps", "widgets.example.com", "secrets", "configmaps"},
		Kubeconfig: kubeconfig,
	}
}

func TestGenerateNamesAndWiring(t *testing.T) {
	m, err := Generate(testParams(t))
	require.NoError(t, err)
	const ns = "heaven-syncer-east"
	assert.Equal(t, ns, m.Namespace.Name)
	assert.Equal(t, "restricted", m.Namespace.Labels["pod-security.kubernetes.io/enforce"])
	for _, obj := range []struct{ kind, namespace string }{
		{m.ServiceAccount.Kind, m.ServiceAccount.Namespace}, {m.Secret.Kind, m.Secret.Namespace}, {m.Deployment.Kind, m.Deployment.Namespace},
	} {
		assert.Equal(t, ns, obj.namespace, obj.kind)
	}
	assert.Equal(t, ns, m.ClusterRole.Name)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ns}, m.ClusterRoleBinding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: m.ServiceAccount.Name, Namespace: ns}}, m.ClusterRoleBinding.Subjects)

	pod := m.Deployment.Spec.Template
	assert.Equal(t, m.Deployment.Spec.Selector.MatchLabels, pod.Labels)
	assert.Equal(t, m.ServiceAccount.Name, pod.Spec.ServiceAccountName)
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, DefaultImage, c.Image)
	assert.Equal(t, []string{
		"--sync-target=east", "--heaven=team-a", "--upstream-kubeconfig=/etc/heaven-syncer/kubeconfig",
		"--metrics-bind-address=:8080", "--resources=deployments.apps,configmaps,widgets.example.com,secrets",
	}, c.Args)
	require.Len(t, pod.Spec.Volumes, 1)
	assert.Equal(t, m.Secret.Name, pod.Spec.Volumes[0].Secret.SecretName)
	assert.Equal(t, KubeconfigDir, c.VolumeMounts[0].MountPath)
	assert.Contains(t, m.Secret.Data, KubeconfigKey)
	assert.NotEmpty(t, pod.Annotations[KubeconfigHashAnnotation])
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
}

func TestGenerateRBACLimitedToTheResources(t *testing.T) {
	m, err := Generate(testParams(t))
	require.NoError(t, err)
	objectVerbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: objectVerbs},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: objectVerbs},
		{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: objectVerbs},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch"}},
		{NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version"}, Verbs: []string{"get"}},
	}, m.ClusterRole.Rules)
	for _, r := range m.ClusterRole.Rules {
		for _, list := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames} {
			assert.NotContains(t, list, "*", "no wildcards: %+v", r)
		}
	}

	none := testParams(t)
	none.Resources = nil
	m, err = Generate(none)
	require.NoError(t, err)
	assert.Len(t, m.ClusterRole.Rules, 3, "without resources only namespaces, CRDs and discovery")
	assert.NotContains(t, strings.Join(m.Deployment.Spec.Template.Spec.Containers[0].Args, " "), "--resources")
}

func TestYAMLIsCleanAndOrdered(t *testing.T) {
	p := testParams(t)
	p.Image = "example.com/heaven-syncer:v1"
	m, err := Generate(p)
	require.NoError(t, err)
	out, err := m.YAML()
	require.NoError(t, err)
	docs := strings.Split(string(out), "---\n")
	var kinds []string
	for _, doc := range docs {
		var obj map[string]any
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &obj))
		kinds = append(kinds, obj["kind"].(string))
		assert.NotContains(t, obj, "status")
		assert.NotNil(t, obj["apiVersion"])
	}
	assert.Equal(t, []string{"Namespace", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Secret", "Deployment"}, kinds)
	assert.NotContains(t, string(out), "null")
	assert.NotContains(t, string(out), "creationTimestamp")
	assert.Contains(t, string(out), "image: example.com/heaven-syncer:v1")
}

func TestNamespaceNameFitsALabel(t *testing.T) {
	assert.Equal(t, "heaven-syncer-east", Namespace("east"))
	long := strings.Repeat("a", 48) + "-" + strings.Repeat("b", 7) // 56 characters, the longest target
	n := Namespace(long)
	assert.Empty(t, validation.IsDNS1123Label(n), n)
	assert.Equal(t, n, Namespace(long), "stable")
	assert.NotEqual(t, n, Namespace(strings.Repeat("a", 48)+"-"+strings.Repeat("c", 7)), "distinct")
	assert.True(t, strings.HasPrefix(n, NamespacePrefix))
}

func TestGenerateRejectsBadParams(t *testing.T) {
	p := testParams(t)
	p.Resources = []string{"Deployments.apps", ""}
	p.Heaven = "Team_A"
	_, err := Generate(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Deployments.apps")
	assert.Contains(t, err.Error(), "Team_A")

	p = testParams(t)
	p.Kubeconfig = nil
	_, err = Generate(p)
	assert.Error(t, err)
}

func TestKubeconfigRoundTrip(t *testing.T) {
	data, err := Kubeconfig("https://h:6443", "team-a", []byte("CA"), []byte("CERT"), []byte("KEY"))
	require.NoError(t, err)
	again, err := Kubeconfig("https://h:6443", "team-a", []byte("CA"), []byte("CERT"), []byte("KEY"))
	require.NoError(t, err)
	assert.Equal(t, data, again, "deterministic: applying it again changes nothing")
	c, err := ParseKubeconfig(data)
	require.NoError(t, err)
	assert.Equal(t, &Credential{Server: "https://h:6443/clusters/team-a", CAPEM: []byte("CA"), CertPEM: []byte("CERT"), KeyPEM: []byte("KEY")}, c)
}

func TestInstalledNamesWhatGenerateMakes(t *testing.T) {
	m, err := Generate(testParams(t))
	require.NoError(t, err)
	objs, err := m.Objects()
	require.NoError(t, err)
	clusterScoped := map[string]bool{}
	for _, o := range objs {
		if o.GetNamespace() == "" {
			clusterScoped[o.GetKind()+"/"+o.GetName()] = true
		}
	}
	got := map[string]bool{}
	for _, o := range Installed("east") {
		got[o.GetKind()+"/"+o.GetName()] = true
	}
	assert.Equal(t, clusterScoped, got, "uninstalling deletes every cluster-scoped object (the namespace holds the rest)")
}
