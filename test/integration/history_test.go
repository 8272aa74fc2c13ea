package integration

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestGitForYourCluster walks the README's "Git for your cluster" with the
// real kubectl and the plugin: alice (edit) writes, bob (view) reads the
// log and diffs but may not revert, alice reverts and restores, each undo
// a commit of hers; carol, who may revert but not touch secrets, can't
// revert a commit that changed one; and a diff against a heaven bob can't
// read is refused.
func TestGitForYourCluster(t *testing.T) {
	pluginDir, err := buildPlugin()
	require.NoError(t, err)
	ts := framework.StartHeavenServer(t, nil)
	const h = "team"
	ts.Kubectl(t, h, "", "create", "namespace", "shop")
	eventually(t, time.Minute, "roles in team", func() (bool, error) {
		_, err := ts.KubectlErr(t, h, "", "create", "clusterrolebinding", "bob-views", "--clusterrole=view", "--user=bob")
		return err == nil, nil
	})
	ts.Kubectl(t, h, "", "create", "clusterrolebinding", "alice-edits", "--clusterrole=edit", "--user=alice")
	ts.Kubectl(t, h, "", "create", "clusterrole", "undoer", "--verb=create", "--resource=reverts.history.heaven.dev,restores.history.heaven.dev")
	ts.Kubectl(t, h, "", "create", "clusterrole", "cm-writer", "--verb=*", "--resource=configmaps")
	ts.Kubectl(t, h, "", "create", "clusterrolebinding", "carol-undoes", "--clusterrole=undoer", "--user=carol")
	ts.Kubectl(t, h, "", "create", "clusterrolebinding", "carol-writes-cms", "--clusterrole=cm-writer", "--user=carol")
	ts.Kubectl(t, "other", "", "create", "configmap", "private")

	as := func(user string) func(args ...string) (string, error) {
		kubeconfig := userKubeconfig(t, ts, certificate(t, ts, user))
		return func(args ...string) (string, error) {
			cmd := exec.CommandContext(t.Context(), kubectlPath(t), args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
	}
	alice, bob, carol := as("alice"), as("bob"), as("carol")
	must := func(kubectl func(...string) (string, error), args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return out
	}
	in := "--server=" + ts.HeavenURL(h)

	// alice writes, rewrites and deletes a config map: three commits, hers.
	must(alice, in, "-n", "shop", "create", "configmap", "web", "--from-literal=color=blue")
	must(alice, in, "-n", "shop", "patch", "configmap", "web", "-p", `{"data":{"color":"red"}}`)
	must(alice, in, "-n", "shop", "delete", "configmap", "web")
	revs := strings.Fields(ts.Kubectl(t, h, "", "get", "commits", "--field-selector", "path=core/configmaps/shop/web", "-o", "jsonpath={.items[*].revision}"))
	require.Len(t, revs, 3, "the config map's commits, newest first")
	created, deleted := revs[2], revs[0]
	authors := ts.Kubectl(t, h, "", "get", "commits", "--field-selector", "path=core/configmaps/shop/web", "-o", "jsonpath={.items[*].author.name}")
	assert.Equal(t, "alice alice alice", authors, "commits are the requesting user's")
	assert.Equal(t, "alice", strings.TrimSpace(ts.Git(t, "log", "-1", "--format=%an", h)))

	// bob (view) reads the log and diffs.
	log := must(bob, "heaven", "log", h, "--", "core/configmaps/shop/web")
	assert.Equal(t, 4, strings.Count(log, "\n"), "a header and three commits:\n%s", log)
	assert.Contains(t, log, "delete core/configmaps/shop/web")
	diff := must(bob, "heaven", "diff", h+"@"+created, h)
	assert.Contains(t, diff, "--- removed core/configmaps/shop/web")
	assert.Contains(t, diff, "-   color: blue")
	out, err := bob("heaven", "revert", deleted, "--heaven", h)
	require.Error(t, err, out)
	assert.Contains(t, out, `reverts.history.heaven.dev is forbidden`)
	out, err = bob("heaven", "diff", h+"@"+created, "other")
	require.Error(t, err, out)
	assert.Contains(t, out, `may not read the history of heaven other`)

	// alice reverts the delete: the config map is back, as it was.
	out = must(alice, "heaven", "revert", deleted, "--heaven", h)
	assert.Contains(t, out, "restored core/configmaps/shop/web")
	assert.Equal(t, "red", must(alice, in, "-n", "shop", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))
	assert.Equal(t, "alice", strings.TrimSpace(ts.Git(t, "log", "-1", "--format=%an", h)))
	out, err = alice("heaven", "revert", deleted, "--heaven", h)
	require.Error(t, err, "a second revert: %s", out)
	assert.Contains(t, out, "has changed since")
	// …and restores its first version.
	must(alice, "heaven", "restore", "configmap/web", "-n", "shop", "--to", created, "--heaven", h)
	assert.Equal(t, "blue", must(alice, in, "-n", "shop", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))
	diff = must(bob, "heaven", "diff", h+"@"+created, h)
	assert.Contains(t, diff, ": 0 objects differ", "restored as it was:\n%s", diff)

	// carol may revert, and write config maps, but not secrets.
	ts.Kubectl(t, h, "", "-n", "shop", "create", "secret", "generic", "token", "--from-literal=k=v")
	secretCommit := strings.TrimSpace(ts.Kubectl(t, h, "", "get", "commits", "--field-selector", "path=core/secrets/shop/token", "-o", "jsonpath={.items[0].metadata.name}"))
	out, err = carol("heaven", "revert", secretCommit, "--heaven", h)
	require.Error(t, err, out)
	assert.Contains(t, out, `may not delete core/secrets/shop/token`)
	ts.Kubectl(t, h, "", "-n", "shop", "get", "secret", "token")
}

// TestOneOffMerge merges a fork back with `kubectl heaven merge`: a dry run
// writes nothing, the merge is one merge commit of the requesting user, a
// conflict blocks it until a resolution is chosen, and a user who may not
// write what the merge changes is refused.
func TestOneOffMerge(t *testing.T) {
	pluginDir, err := buildPlugin()
	require.NoError(t, err)
	ts := framework.StartHeavenServer(t, nil)
	ts.Kubectl(t, "main", "", "create", "configmap", "web", "--from-literal=color=blue")
	ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"try"},"spec":{"fork":{"heaven":"main"}}}`, "create", "-f", "-")
	waitHeavenReady(t, ts, "try")
	ts.Kubectl(t, "try", "", "patch", "configmap", "web", "-p", `{"data":{"color":"green"}}`)
	eventually(t, time.Minute, "roles in main", func() (bool, error) {
		_, err := ts.KubectlErr(t, "main", "", "create", "clusterrolebinding", "alice-edits", "--clusterrole=edit", "--user=alice")
		return err == nil, nil
	})
	ts.Kubectl(t, "try", "", "create", "clusterrolebinding", "alice-views", "--clusterrole=view", "--user=alice")

	kubeconfig := userKubeconfig(t, ts, certificate(t, ts, "alice"))
	alice := func(args ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), kubectlPath(t), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	head := func() string { return strings.TrimSpace(ts.Git(t, "rev-parse", "main")) }

	before := head()
	out, err := alice("heaven", "merge", "try", "--into", "main", "--resources", "core/configmaps", "--dry-run")
	require.NoError(t, err, out)
	assert.Contains(t, out, "would change 1 objects")
	assert.Contains(t, out, "changed core/configmaps/default/web")
	assert.Equal(t, before, head(), "a dry run writes nothing")

	out, err = alice("heaven", "merge", "try", "--into", "main", "--resources", "core/configmaps")
	require.NoError(t, err, out)
	assert.Contains(t, out, "1 objects changed")
	assert.Equal(t, "green", ts.Kubectl(t, "main", "", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))
	assert.Equal(t, "alice", strings.TrimSpace(ts.Git(t, "log", "-1", "--format=%an", "main")))
	assert.Len(t, strings.Fields(ts.Git(t, "log", "-1", "--format=%P", "main")), 2, "a merge commit")
	out, err = alice("heaven", "merge", "try", "--into", "main", "--resources", "core/configmaps")
	require.NoError(t, err, out)
	assert.Contains(t, out, "already up to date")

	// Both sides change the color: Manual blocks, PreferSource takes try's.
	ts.Kubectl(t, "try", "", "patch", "configmap", "web", "-p", `{"data":{"color":"yellow"}}`)
	ts.Kubectl(t, "main", "", "patch", "configmap", "web", "-p", `{"data":{"color":"black"}}`)
	out, err = alice("heaven", "merge", "try", "--into", "main", "--resources", "core/configmaps")
	require.NoError(t, err, out)
	assert.Contains(t, out, "not merged: 1 of 1 conflicts need a resolution")
	assert.Contains(t, out, `conflict core/configmaps/default/web .data.color: Manual`)
	assert.Equal(t, "black", ts.Kubectl(t, "main", "", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))
	out, err = alice("heaven", "merge", "try", "--into", "main", "--resources", "core/configmaps", "--policy", "PreferSource")
	require.NoError(t, err, out)
	assert.Equal(t, "yellow", ts.Kubectl(t, "main", "", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))

	// Merging needs the right to write what changes (alice's merges leave
	// out try's RBAC bindings, which she may not write): carol may create
	// merges but not touch config maps.
	ts.Kubectl(t, "try", "", "patch", "configmap", "web", "-p", `{"data":{"color":"white"}}`)
	ts.Kubectl(t, "main", "", "create", "clusterrole", "merger", "--verb=create", "--resource=merges.history.heaven.dev")
	ts.Kubectl(t, "main", "", "create", "clusterrolebinding", "carol-merges", "--clusterrole=merger", "--user=carol")
	ts.Kubectl(t, "try", "", "create", "clusterrolebinding", "carol-views", "--clusterrole=view", "--user=carol")
	carolIn := withStdin(t, ts, "carol", `{"apiVersion":"history.heaven.dev/v1alpha1","kind":"Merge","spec":{"source":"try","resources":["core/configmaps"]}}`)
	out, err = carolIn("main", "create", "--validate=false", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, `may not update core/configmaps/default/web`)
	assert.Equal(t, "yellow", ts.Kubectl(t, "main", "", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))
}

// TestListAtAnyRevision: a list at an exact resource version keeps working
// after the heaven's history is compacted past it (read from git), while a
// watch from there is told it is too old, as in Kubernetes.
func TestListAtAnyRevision(t *testing.T) {
	ts := framework.StartHeavenServer(t, func(o *server.Options) { o.CompactionInterval = 200 * time.Millisecond })
	kube := ts.Kube("old")
	cm, err := kube.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web"}, Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	then := cm.ResourceVersion
	for _, color := range []string{"red", "green"} {
		cm.Data["color"] = color
		cm, err = kube.CoreV1().ConfigMaps("default").Update(t.Context(), cm, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		w, err := kube.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: then})
		if err == nil {
			defer w.Stop()
			select {
			case ev := <-w.ResultChan():
				status, ok := ev.Object.(*metav1.Status)
				require.True(c, ok, "an error event, not %v", ev.Type)
				assert.Equal(c, int32(http.StatusGone), status.Code)
			case <-time.After(time.Second):
				c.Errorf("no event")
			}
			return
		}
		assert.True(c, apierrors.IsResourceExpired(err) || apierrors.IsGone(err), "watch from %s: %v", then, err)
	}, 30*time.Second, 100*time.Millisecond, "revision %s compacted", then)

	list, err := kube.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{
		ResourceVersion: then, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "blue", list.Items[0].Data["color"], "as it was then")
	assert.Equal(t, then, list.ResourceVersion)
}

// TestHeavenAsOfARevision reads /clusters/<name>@<revision> with the real
// kubectl: the heaven's objects as they were, read-only, for whom the
// heaven's RBAC lets read them now; a revision not reached yet is not
// found.
func TestHeavenAsOfARevision(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "team"
	rv := ts.Kubectl(t, h, "", "create", "configmap", "web", "--from-literal=color=blue", "-o", "jsonpath={.metadata.resourceVersion}")
	ts.Kubectl(t, h, "", "patch", "configmap", "web", "-p", `{"data":{"color":"red"}}`)
	ts.Kubectl(t, h, "", "create", "configmap", "later")
	then := h + "@" + rv

	assert.Equal(t, "blue", ts.Kubectl(t, then, "", "get", "configmap", "web", "-o", "jsonpath={.data.color}"))
	assert.Equal(t, "web", ts.Kubectl(t, then, "", "get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}"), "later came later")
	assert.Equal(t, "red", ts.Kubectl(t, h, "", "get", "configmap", "web", "-o", "jsonpath={.data.color}"), "the heaven itself is as it is")

	out, err := ts.KubectlErr(t, then, "", "create", "configmap", "x")
	require.Error(t, err, out)
	assert.Contains(t, out, "is read-only: POST is not allowed")

	out, err = ts.KubectlErr(t, h+"@99999", "", "get", "--raw", "/api/v1/namespaces/default/configmaps")
	require.Error(t, err, out)
	assert.Contains(t, out, "has not reached that revision")

	// Who may read the past is who may read the heaven now.
	viewer := kubectlAs(t, ts, "bob")
	out, err = viewer(then, "get", "configmaps")
	forbidden(t, out, err, "bob has no role in team")
	ts.Kubectl(t, h, "", "create", "clusterrolebinding", "bob-views", "--clusterrole=view", "--user=bob")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := viewer(then, "get", "configmap", "web", "-o", "jsonpath={.data.color}")
		assert.NoError(c, err, out)
		assert.Equal(c, "blue", out)
	}, 30*time.Second, 100*time.Millisecond)
}
