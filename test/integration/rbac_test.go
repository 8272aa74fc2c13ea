package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// userKubectl runs the real kubectl as some user against a heaven, and
// returns its output and error.
type userKubectl func(heaven string, args ...string) (string, error)

// kubectlAs is kubectl as user, with a certificate of the heaven CA
// (groups as its O).
func kubectlAs(t *testing.T, ts *framework.HeavenServer, user string, groups ...string) userKubectl {
	t.Helper()
	return kubectlWith(t, ts, userKubeconfig(t, ts, certificate(t, ts, user, groups...)), "")
}

// withStdin is kubectlAs user, stdin on kubectl's standard input.
func withStdin(t *testing.T, ts *framework.HeavenServer, user, stdin string) userKubectl {
	t.Helper()
	return kubectlWith(t, ts, userKubeconfig(t, ts, certificate(t, ts, user)), stdin)
}

// kubectlWithToken runs kubectl with a bearer token and nothing else.
func kubectlWithToken(t *testing.T, ts *framework.HeavenServer, token string) userKubectl {
	t.Helper()
	return kubectlWith(t, ts, userKubeconfig(t, ts, &clientcmdapi.AuthInfo{Token: token}), "")
}

// certificate is a client certificate of the heaven CA for user in groups.
func certificate(t *testing.T, ts *framework.HeavenServer, user string, groups ...string) *clientcmdapi.AuthInfo {
	t.Helper()
	cfg := scopedConfig(t, ts, server.RootHeaven, user, groups...)
	return &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
}

// userKubeconfig writes a kubeconfig whose one context reaches the root
// heaven with auth, and returns its path.
func userKubeconfig(t *testing.T, ts *framework.HeavenServer, auth *clientcmdapi.AuthInfo) string {
	t.Helper()
	ca, err := os.ReadFile(filepath.Join(ts.DataDir, "pki", "ca.crt"))
	require.NoError(t, err)
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["heaven"] = &clientcmdapi.Cluster{Server: ts.HeavenURL(server.RootHeaven), CertificateAuthorityData: ca}
	kubeconfig.AuthInfos["user"] = auth
	kubeconfig.Contexts["heaven"] = &clientcmdapi.Context{Cluster: "heaven", AuthInfo: "user"}
	kubeconfig.CurrentContext = "heaven"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*kubeconfig, path))
	return path
}

// kubectlWith runs kubectl with kubeconfig against a heaven, stdin on its
// standard input.
func kubectlWith(t *testing.T, ts *framework.HeavenServer, kubeconfig, stdin string) userKubectl {
	return func(heaven string, args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), kubectlPath(t), append([]string{"--server", ts.HeavenURL(heaven), "--request-timeout", "60s"}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "HOME="+t.TempDir())
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}

// forbidden asserts that kubectl failed with a 403 of the API.
func forbidden(t *testing.T, out string, err error, what string) {
	t.Helper()
	require.Error(t, err, "%s: want Forbidden, got %s", what, out)
	require.Regexp(t, `Forbidden|is forbidden`, out, what)
}

// unauthorized asserts that kubectl was answered 401.
func unauthorized(t *testing.T, out, what string) {
	t.Helper()
	assert.Contains(t, out, "You must be logged in to the server", what)
}

// TestTenantsAreAuthorizedByTheirHeavensRBAC: each heaven is its own RBAC
// domain with Kubernetes' default roles; a binding in team-a grants nothing
// in team-b; escalation is refused as kube-apiserver refuses it.
func TestTenantsAreAuthorizedByTheirHeavensRBAC(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	for _, h := range []string{"team-a", "team-b"} {
		ts.Kubectl(t, h, "", "create", "configmap", "settings", "--from-literal=a=1")
	}
	// The default roles are there without anybody writing them.
	out, _ := ts.KubectlErr(t, "team-a", "", "auth", "can-i", "list", "configmaps", "--as=carol", "--as-group=system:authenticated")
	assert.Equal(t, "no", strings.TrimSpace(out), "nobody is bound yet")
	out, _ = ts.KubectlErr(t, "team-a", "", "auth", "can-i", "get", "/version", "--as=carol", "--as-group=system:authenticated")
	assert.Equal(t, "yes", strings.TrimSpace(out), "system:public-info-viewer's binding is a default")
	// ...and shown, as in any cluster, though no heaven stores them.
	assert.Contains(t, ts.Kubectl(t, "team-a", "", "get", "clusterroles", "-l", "kubernetes.io/bootstrapping=rbac-defaults", "-o", "name"), "clusterrole.rbac.authorization.k8s.io/edit\n")
	assert.Contains(t, ts.Kubectl(t, "team-a", "", "get", "clusterrole", "view", "-o", "jsonpath={.rules[*].resources}"), "configmaps")
	assert.Equal(t, "system:authenticated", ts.Kubectl(t, "team-a", "", "get", "clusterrolebinding", "system:discovery", "-o", "jsonpath={.subjects[*].name}"))
	assert.NotContains(t, ts.Git(t, "ls-tree", "-r", "--name-only", "team-a"), "clusterroles/", "the defaults are not in git")
	ts.Kubectl(t, "team-a", "", "create", "clusterrolebinding", "alice-views", "--clusterrole=view", "--user=alice")
	alice := kubectlAs(t, ts, "alice", "developers")

	t.Run("view grants reading in its heaven only", func(t *testing.T) {
		eventually(t, 10*time.Second, "alice's binding in effect", func() (bool, error) {
			_, err := alice("team-a", "get", "configmap", "settings")
			return err == nil, nil
		})
		out, err := alice("team-a", "create", "configmap", "mine", "--from-literal=b=2")
		forbidden(t, out, err, "create with view")
		assert.Contains(t, out, `User "alice" cannot create resource "configmaps"`)
		out, err = alice("team-b", "get", "configmap", "settings")
		forbidden(t, out, err, "team-a's binding in team-b")
		out, err = alice("root", "get", "heavens")
		forbidden(t, out, err, "root")
	})

	t.Run("whoami and can-i answer for the heaven asked", func(t *testing.T) {
		out, err := alice("team-a", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		require.NoError(t, err, out)
		assert.Equal(t, `alice ["developers","system:authenticated"]`, out)
		out, _ = alice("team-a", "auth", "can-i", "get", "configmaps")
		assert.Equal(t, "yes", strings.TrimSpace(out))
		out, _ = alice("team-b", "auth", "can-i", "get", "configmaps")
		assert.Equal(t, "no", strings.TrimSpace(out))
		list, err := alice("team-a", "auth", "can-i", "--list", "-n", "default")
		require.NoError(t, err, list)
		assert.Regexp(t, `(?m)^configmaps\s+\[\]\s+\[\]\s+\[get list watch\]`, list)
		list, err = alice("team-b", "auth", "can-i", "--list", "-n", "default")
		require.NoError(t, err, list)
		assert.NotContains(t, list, "configmaps")
	})

	t.Run("escalation is refused, granting what one holds is not", func(t *testing.T) {
		ts.Kubectl(t, "team-a", "", "create", "rolebinding", "bob-admin", "--clusterrole=admin", "--user=bob", "-n", "default")
		bob := kubectlAs(t, ts, "bob")
		eventually(t, 10*time.Second, "bob's binding in effect", func() (bool, error) {
			out, _ := bob("team-a", "auth", "can-i", "create", "rolebindings", "-n", "default")
			return strings.TrimSpace(out) == "yes", nil
		})
		out, err := bob("team-a", "create", "rolebinding", "bob-everything", "--clusterrole=cluster-admin", "--user=bob", "-n", "default")
		forbidden(t, out, err, "binding cluster-admin with admin")
		assert.Contains(t, out, "attempting to grant RBAC permissions not currently held")
		out, err = bob("team-a", "create", "clusterrolebinding", "bob-everything", "--clusterrole=cluster-admin", "--user=bob")
		forbidden(t, out, err, "cluster-wide binding with a namespace's admin")
		// edit is part of admin: bob may hand it out in his namespace.
		out, err = bob("team-a", "create", "rolebinding", "dave-edits", "--clusterrole=edit", "--user=dave", "-n", "default")
		require.NoError(t, err, out)
	})
}

// TestHeavenCreatorOwnsIt: whoever creates a Heaven in root (as root's RBAC
// allows) is cluster-admin of the new heaven through a ClusterRoleBinding in
// its branch; spec.owners adds more; nobody can claim to be the creator.
func TestHeavenCreatorOwnsIt(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.MaxHeavensPerUser = 1 })
	eventually(t, time.Minute, "a role for heaven makers in root", func() (bool, error) {
		_, err := ts.KubectlErr(t, "root", "", "create", "clusterrole", "heaven-maker", "--verb=create,get,list,watch,update,patch", "--resource=heavens.heaven.dev")
		return err == nil, nil
	})
	ts.Kubectl(t, "root", "", "create", "clusterrolebinding", "alice-makes-heavens", "--clusterrole=heaven-maker", "--user=alice")
	alice := kubectlAs(t, ts, "alice")
	bob := kubectlAs(t, ts, "bob")

	heaven := `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"alice-land","annotations":{"heaven.dev/created-by":"mallory"}}}`
	out, err := withStdin(t, ts, "bob", heaven)("root", "create", "-f", "-")
	forbidden(t, out, err, "bob may not create heavens")
	var created string
	eventually(t, 10*time.Second, "alice may create heavens", func() (bool, error) {
		created, err = withStdin(t, ts, "alice", heaven)("root", "create", "-f", "-")
		return err == nil, nil
	})
	require.Contains(t, created, "alice-land created")
	assert.Equal(t, "alice", ts.Kubectl(t, "root", "", "get", "heaven", "alice-land", "-o", `jsonpath={.metadata.annotations.heaven\.dev/created-by}`), "the server says who created it")

	eventually(t, 30*time.Second, "alice owns alice-land", func() (bool, error) {
		_, err := alice("alice-land", "create", "configmap", "hers", "--from-literal=a=1")
		return err == nil, nil
	})
	assert.Equal(t, "alice", ts.Kubectl(t, "alice-land", "", "get", "clusterrolebinding", "heaven:owners", "-o", "jsonpath={.subjects[*].name}"))
	assert.Contains(t, ts.Git(t, "ls-tree", "-r", "--name-only", "alice-land"), "clusterrolebindings/heaven:owners", "the binding is in the heaven's branch")
	eventually(t, 10*time.Second, "the Heaven reports its owners", func() (bool, error) {
		return ts.Kubectl(t, "root", "", "get", "heaven", "alice-land", "-o", "jsonpath={.status.owners}") == `["alice"]`, nil
	})

	out, err = bob("alice-land", "get", "configmap", "hers")
	forbidden(t, out, err, "bob in alice's heaven")
	out, err = alice("root", "annotate", "heaven", "alice-land", "heaven.dev/created-by=bob", "--overwrite")
	require.NoError(t, err, out)
	assert.Equal(t, "alice", ts.Kubectl(t, "root", "", "get", "heaven", "alice-land", "-o", `jsonpath={.metadata.annotations.heaven\.dev/created-by}`), "the creator never changes")

	out, err = withStdin(t, ts, "alice", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"alice-two"}}`)("root", "create", "-f", "-")
	forbidden(t, out, err, "a second heaven beyond --max-heavens-per-user=1")
	assert.Contains(t, out, `user "alice" has created 1 heavens`)

	out, err = alice("root", "patch", "heaven", "alice-land", "--type=merge", "-p", `{"spec":{"owners":["bob"]}}`)
	require.NoError(t, err, out)
	eventually(t, 30*time.Second, "bob is an owner too", func() (bool, error) {
		_, err := bob("alice-land", "get", "configmap", "hers")
		return err == nil, nil
	})
}

// TestServiceAccountTokensArePerHeaven: `kubectl create token` issues a
// token that works in its heaven with what RBAC grants the ServiceAccount,
// is refused (401) by every other heaven, and stops working once the
// ServiceAccount is gone.
func TestServiceAccountTokensArePerHeaven(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	for _, h := range []string{"team-a", "team-b"} {
		ts.Kubectl(t, h, "", "create", "serviceaccount", "robot")
		ts.Kubectl(t, h, "", "create", "rolebinding", "robot-views", "--clusterrole=view", "--serviceaccount=default:robot")
		ts.Kubectl(t, h, "", "create", "configmap", "settings", "--from-literal=a=1")
	}
	token := strings.TrimSpace(ts.Kubectl(t, "team-a", "", "create", "token", "robot"))
	robot := kubectlWithToken(t, ts, token)

	out, err := robot("team-a", "get", "configmap", "settings")
	require.NoError(t, err, out)
	out, err = robot("team-a", "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
	require.NoError(t, err, out)
	assert.Equal(t, `system:serviceaccount:default:robot ["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]`, out)
	out, err = robot("team-a", "create", "configmap", "mine")
	forbidden(t, out, err, "view does not create")
	out, err = robot("team-a", "get", "configmaps", "-n", "kube-system")
	forbidden(t, out, err, "the binding is in default only")

	out, err = robot("team-b", "get", "configmap", "settings")
	require.Error(t, err, "team-a's token in team-b: %s", out)
	unauthorized(t, out, "a token of team-a is no credential in team-b, though team-b has a default:robot too")
	out, err = robot("root", "get", "heavens")
	require.Error(t, err, out)
	unauthorized(t, out, "in root")

	review := ts.Kubectl(t, "team-a", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+token+`"}}`,
		"create", "-f", "-", "-o", "jsonpath={.status.authenticated} {.status.user.username}")
	assert.Equal(t, "true system:serviceaccount:default:robot", review, "TokenReview in the issuing heaven")
	review = ts.Kubectl(t, "team-b", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+token+`"}}`,
		"create", "-f", "-", "-o", "jsonpath=[{.status.authenticated}] [{.status.user.username}]")
	assert.Equal(t, "[] []", review, "TokenReview in another heaven: not authenticated")

	ts.Kubectl(t, "team-a", "", "delete", "serviceaccount", "robot")
	out, err = robot("team-a", "get", "configmap", "settings")
	require.Error(t, err, "the token of a deleted ServiceAccount: %s", out)
	unauthorized(t, out, "the ServiceAccount is gone")
}
