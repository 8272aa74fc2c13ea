package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/pkg/pki"
	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestNoConfusedDeputy: forks, merges, remotes and sync targets act only
// with the rights of who asked for them. alice owns team-a, bob owns
// team-b; root's RBAC lets both create Heavens, AutomatedMerges and
// SyncTargets.
func TestNoConfusedDeputy(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.ClusterController = false })
	// kubectl checks the resources against discovery, which has the CRDs
	// of root a moment after it serves.
	eventually(t, time.Minute, "a role for tenants in root", func() (bool, error) {
		_, err := ts.KubectlErr(t, "root", "", "create", "clusterrole", "tenant", "--verb=create,get,list,watch,update,patch",
			"--resource=heavens.heaven.dev,automatedmerges.heaven.dev,synctargets.heaven.dev")
		return err == nil, nil
	})
	ts.Kubectl(t, "root", "", "create", "clusterrolebinding", "tenants", "--clusterrole=tenant", "--user=alice", "--user=bob")
	apply := func(user, manifest string) (string, error) {
		return withStdin(t, ts, user, manifest)("root", "create", "-f", "-")
	}
	alice, bob := kubectlAs(t, ts, "alice"), kubectlAs(t, ts, "bob")
	for user, heaven := range map[string]string{"alice": "team-a", "bob": "team-b"} {
		eventually(t, 10*time.Second, user+" creates "+heaven, func() (bool, error) {
			_, err := apply(user, `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"`+heaven+`"}}`)
			return err == nil, nil
		})
		own := kubectlAs(t, ts, user)
		eventually(t, 30*time.Second, user+" owns "+heaven, func() (bool, error) {
			_, err := own(heaven, "create", "configmap", "settings", "--from-literal=owner="+user)
			return err == nil, nil
		})
	}

	t.Run("forks", func(t *testing.T) {
		out, err := apply("bob", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"bobs-copy"},"spec":{"fork":{"heaven":"team-a"}}}`)
		forbidden(t, out, err, "bob forks team-a")
		assert.Contains(t, out, `user "bob" may not get every resource in heaven team-a`)
		out, err = apply("alice", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"alices-copy"},"spec":{"fork":{"heaven":"team-a"}}}`)
		require.NoError(t, err, out)
		out, err = apply("bob", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"team-a"}}`)
		require.Error(t, err, "team-a's Heaven exists: %s", out)
	})

	t.Run("merges", func(t *testing.T) {
		out, err := apply("bob", `{"apiVersion":"heaven.dev/v1alpha1","kind":"AutomatedMerge","metadata":{"name":"steal"},"spec":{"sources":["team-a"],"target":"team-b"}}`)
		forbidden(t, out, err, "bob merges team-a into team-b")
		assert.Contains(t, out, "in heaven team-a")
		out, err = apply("bob", `{"apiVersion":"heaven.dev/v1alpha1","kind":"AutomatedMerge","metadata":{"name":"plant"},"spec":{"sources":["team-b"],"target":"team-a"}}`)
		forbidden(t, out, err, "bob merges team-b into team-a")
		assert.Contains(t, out, "in heaven team-a")
	})

	t.Run("remotes", func(t *testing.T) {
		remote := filepath.Join(t.TempDir(), "remote.git")
		framework.Git(t, "init", "--bare", "-q", remote)
		out, err := bob("root", "patch", "heaven", "team-a", "--type=merge", "-p", `{"spec":{"remote":{"url":"`+remote+`"}}}`)
		forbidden(t, out, err, "bob points team-a at his remote")
		assert.Contains(t, out, "in heaven team-a")

		out, err = alice("root", "patch", "heaven", "team-a", "--type=merge", "-p", `{"spec":{"remote":{"url":"`+remote+`","interval":"1s"}}}`)
		require.NoError(t, err, "alice points her heaven at a remote: %s", out)
		synced := func() string {
			return ts.Kubectl(t, "root", "", "get", "heaven", "team-a", "-o", `jsonpath={.status.conditions[?(@.type=="RemoteSynced")].status} {.status.conditions[?(@.type=="RemoteSynced")].reason}`)
		}
		eventually(t, 30*time.Second, "team-a is pushed", func() (bool, error) { return synced() == "True Synced", nil })
		// Revoked: alice is no longer an owner of team-a.
		ts.Kubectl(t, "team-a", "", "delete", "clusterrolebinding", "heaven:owners")
		eventually(t, 30*time.Second, "the remote stops", func() (bool, error) { return synced() == "False RequesterUnauthorized", nil })
		ts.Kubectl(t, "root", "", "patch", "heaven", "team-a", "--type=json", "-p", `[{"op":"remove","path":"/spec/remote"}]`)
		ts.Kubectl(t, "team-a", "", "create", "clusterrolebinding", "heaven:owners", "--clusterrole=cluster-admin", "--user=alice")
	})

	t.Run("sync targets", func(t *testing.T) {
		out, err := apply("bob", `{"apiVersion":"heaven.dev/v1alpha1","kind":"SyncTarget","metadata":{"name":"bobs-cluster"},"spec":{"heaven":"team-a"}}`)
		forbidden(t, out, err, "bob syncs team-a to his cluster")
		out, err = apply("alice", `{"apiVersion":"heaven.dev/v1alpha1","kind":"SyncTarget","metadata":{"name":"alices-cluster"},"spec":{"heaven":"team-a"}}`)
		require.NoError(t, err, out)

		// Its syncer works while alice may have team-a synced, and no longer.
		syncer := kubernetes.NewForConfigOrDie(scopedConfig(t, ts, "team-a", pki.SyncerUser("team-a", "alices-cluster"), pki.SyncerGroup))
		_, err = syncer.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		ts.Kubectl(t, "team-a", "", "delete", "clusterrolebinding", "heaven:owners")
		eventually(t, 30*time.Second, "the syncer stops", func() (bool, error) {
			_, err := syncer.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
			return apierrors.IsForbidden(err), nil
		})
		ts.Kubectl(t, "team-a", "", "create", "clusterrolebinding", "heaven:owners", "--clusterrole=cluster-admin", "--user=alice")
		eventually(t, 30*time.Second, "the syncer works again", func() (bool, error) {
			_, err := syncer.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
			return err == nil, nil
		})
	})

	t.Run("impersonation", func(t *testing.T) {
		out, err := bob("team-a", "get", "configmaps", "--as=alice")
		forbidden(t, out, err, "bob as alice in team-a")
		out, err = bob("root", "get", "heavens", "--as=alice")
		forbidden(t, out, err, "bob as alice in root")
		out, err = bob("team-b", "get", "configmaps", "--as=bob", "--as-group=system:masters")
		forbidden(t, out, err, "bob as an administrator, in his own heaven")
		out, err = bob("team-b", "get", "configmaps", "--as=bob", "--as-group=heaven:admins")
		forbidden(t, out, err, "bob as heaven:admins")
		out, err = bob("team-b", "auth", "whoami", "--as=carol", "-o", "jsonpath={.status.userInfo.username}")
		require.NoError(t, err, out)
		assert.Equal(t, "carol", out, "the owner of team-b may impersonate others in team-b, as a cluster-admin may")
	})

	t.Run("a revoked right stops the merge", func(t *testing.T) {
		ts.Kubectl(t, "shared", "", "create", "configmap", "one", "--from-literal=n=1")
		ts.Kubectl(t, "shared", "", "create", "clusterrolebinding", "alice-reads", "--clusterrole=view", "--user=alice")
		var out string
		var err error
		eventually(t, 10*time.Second, "alice may read shared", func() (bool, error) {
			out, err = apply("alice", `{"apiVersion":"heaven.dev/v1alpha1","kind":"AutomatedMerge","metadata":{"name":"from-shared"},"spec":{"sources":["shared"],"target":"team-a","resources":["core/configmaps"]}}`)
			return err == nil, nil
		})
		require.NoError(t, err, out)
		eventually(t, 30*time.Second, "shared merged into team-a", func() (bool, error) {
			_, err := alice("team-a", "get", "configmap", "one")
			return err == nil, nil
		})
		assert.Equal(t, "alice", strings.TrimSpace(ts.Git(t, "log", "-1", "--merges", "--format=%an", "team-a")), "the merge is authored by who it acts for")
		assert.Equal(t, "True", ts.Kubectl(t, "root", "", "get", "automatedmerge", "from-shared", "-o", `jsonpath={.status.conditions[?(@.type=="Authorized")].status}`))

		ts.Kubectl(t, "shared", "", "delete", "clusterrolebinding", "alice-reads")
		ts.Kubectl(t, "shared", "", "create", "configmap", "two", "--from-literal=n=2")
		eventually(t, 30*time.Second, "the merge stops", func() (bool, error) {
			return ts.Kubectl(t, "root", "", "get", "automatedmerge", "from-shared", "-o", `jsonpath={.status.conditions[?(@.type=="Authorized")].status}`) == "False", nil
		})
		msg := ts.Kubectl(t, "root", "", "get", "automatedmerge", "from-shared", "-o", `jsonpath={.status.conditions[?(@.type=="Authorized")].message}`)
		assert.Contains(t, msg, `user "alice" may not get configmaps in heaven shared`)
		out, err = alice("team-a", "get", "configmap", "two")
		require.Error(t, err, "two is not merged: %s", out)
	})
}
