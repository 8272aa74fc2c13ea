package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestKubectlHeavenPlugin drives `kubectl heaven` with the real kubectl
// and the plugin on PATH.
func TestKubectlHeavenPlugin(t *testing.T) {
	pluginDir, err := buildPlugin()
	require.NoError(t, err)
	ts := startServer(t, "", nil)
	// The plugin rewrites the kubeconfig: a copy of the admin's.
	data, err := os.ReadFile(ts.kubeconfig())
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "config")
	require.NoError(t, os.WriteFile(kubeconfig, data, 0o600))
	// kubectl takes a plugin's flags only after its name.
	context := "root"
	kubectl := func(args ...string) (string, error) {
		if len(args) > 1 && args[len(args)-2] == "--context" {
			context, args = args[len(args)-1], args[:len(args)-2]
			defer func() { context = "root" }()
		}
		cmd := exec.Command(kubectlPath(t), append(args, "--kubeconfig", kubeconfig, "--context", context)...)
		cmd.Env = append(os.Environ(), "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		require.NoError(t, err, "kubectl %s: %s", strings.Join(args, " "), out)
		return out
	}

	require.Equal(t, "root\n", must("heaven", "current"))
	require.Contains(t, must("heaven", "create", "team-a"), "heaven team-a created at revision")
	must("create", "configmap", "x", "--from-literal=a=b", "--server", ts.url+"/clusters/team-a")
	require.Contains(t, must("heaven", "create", "try", "--fork", "team-a"), "heaven try created")
	list := must("heaven", "list")
	require.Regexp(t, `\*\s+root\s+generic\s+Ready`, list)
	require.Regexp(t, `\n\s+try\s+generic\s+Ready\s+\d+\s+[0-9a-f]{12}\s+team-a@\d+`, list)

	require.Contains(t, must("heaven", "use", "try"), `Current heaven is "try" (was "root")`)
	require.Equal(t, "try\n", must("heaven", "current"))
	require.Contains(t, must("get", "configmap", "x", "-o", "name"), "configmap/x", "the fork has team-a's objects")
	out, err := kubectl("heaven", "use", "nope")
	require.Error(t, err)
	require.Contains(t, out, "no heaven nope")
	require.Contains(t, must("heaven", "use", "-"), `Current heaven is "root" (was "try")`)
	require.Equal(t, "root\n", must("heaven", "current"))
	// Other contexts sharing the cluster entry are left alone.
	require.Contains(t, must("heaven", "current", "--context", "default"), "default")

	require.Contains(t, must("heaven", "delete", "try"), "heaven try deleted")
	out, err = kubectl("heaven", "create", "bad", "--fork", "team-a@x")
	require.Error(t, err)
	require.Contains(t, out, "the revision after @ must be a positive number")
}

// TestEveryHeavenHasAHeavenObject: heavens created on first use, and
// branches found in the repository at start, are listed by kubectl get
// heavens.
func TestEveryHeavenHasAHeavenObject(t *testing.T) {
	dataDir := t.TempDir()
	ts := startServer(t, dataDir, nil)
	ts.kubectl("team-a", "", "create", "configmap", "x")
	eventually(t, time.Minute, "team-a listed", func() (bool, error) {
		out, err := ts.kubectlErr("root", "", "get", "heavens", "-o", "name")
		return strings.Contains(out, "heaven.heaven.dev/team-a"), err
	})
	ts.stop()
	// A branch made with git while the server is down.
	head := strings.TrimSpace(ts.git("rev-parse", "refs/heads/team-a"))
	ts.git("update-ref", "refs/heads/pushed", head)
	ts = startServer(t, dataDir, nil)
	eventually(t, time.Minute, "the pushed branch listed and ready", func() (bool, error) {
		out, err := ts.kubectlErr("root", "", "get", "heaven", "pushed", "-o", "jsonpath={.status.phase}")
		return out == "Ready", err
	})
	require.Contains(t, ts.kubectl("pushed", "", "get", "configmap", "x", "-o", "name"), "configmap/x")
}

// TestTenantWithThePlugin is the README's Tenants flow: a user whom root's
// RBAC lets create Heavens creates one with `kubectl heaven create`, owns
// it, and hands out access in it.
func TestTenantWithThePlugin(t *testing.T) {
	pluginDir, err := buildPlugin()
	require.NoError(t, err)
	ts := framework.StartHeavenServer(t, nil)
	eventually(t, time.Minute, "a role for heaven makers in root", func() (bool, error) {
		_, err := ts.KubectlErr(t, "root", "", "create", "clusterrole", "heaven-maker", "--verb=create,get,list,watch", "--resource=heavens.heaven.dev")
		return err == nil, nil
	})
	ts.Kubectl(t, "root", "", "create", "clusterrolebinding", "alice-makes-heavens", "--clusterrole=heaven-maker", "--user=alice")

	// alice's kubeconfig: her certificate, a context pointing at root.
	path := userKubeconfig(t, ts, certificate(t, ts, "alice"))
	alice := func(args ...string) (string, error) {
		cmd := exec.Command(kubectlPath(t), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+path, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := alice("heaven", "create", "alices")
	require.NoError(t, err, out)
	out, err = alice("heaven", "use", "alices")
	require.NoError(t, err, out)
	eventually(t, 30*time.Second, "alice hands out access in her heaven", func() (bool, error) {
		_, err := alice("create", "rolebinding", "bob-views", "--clusterrole=view", "--user=bob")
		return err == nil, nil
	})
	out, err = alice("heaven", "create", "not-hers", "--fork", "root")
	require.Error(t, err, "alice may not fork root: %s", out)
	require.Contains(t, out, `may not get every resource in heaven root`)
	require.Equal(t, "bob", strings.TrimSpace(ts.Kubectl(t, "alices", "", "get", "rolebinding", "bob-views", "-o", "jsonpath={.subjects[0].name}")))
}
