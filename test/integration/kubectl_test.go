package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What the widget should be.
            properties:
              size: {type: integer, description: How big the widget is.}
          status:
            type: object
            properties:
              ready: {type: boolean}
`

// TestKubectlVerbs runs every kubectl verb a user needs against one heaven.
func TestKubectlVerbs(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "team-a"

	// create, get with label and field selectors, label, annotate
	ts.Kubectl(t, h, "", "create", "configmap", "one", "--from-literal=a=b")
	ts.Kubectl(t, h, "", "create", "configmap", "two", "--from-literal=a=c")
	ts.Kubectl(t, h, "", "label", "configmap", "one", "tier=web")
	ts.Kubectl(t, h, "", "annotate", "configmap", "one", "note=hello")
	assert.Equal(t, "one", ts.Kubectl(t, h, "", "get", "cm", "-l", "tier=web", "-o", "jsonpath={.items[*].metadata.name}"))
	assert.Equal(t, "two", ts.Kubectl(t, h, "", "get", "cm", "--field-selector", "metadata.name=two", "-o", "jsonpath={.items[*].metadata.name}"))
	assert.Equal(t, "hello", ts.Kubectl(t, h, "", "get", "cm", "one", "-o", "jsonpath={.metadata.annotations.note}"))

	// patch: merge, json, strategic (on a built-in with a keyed list)
	ts.Kubectl(t, h, "", "patch", "configmap", "one", "--type=merge", "-p", `{"data":{"m":"1"}}`)
	ts.Kubectl(t, h, "", "patch", "configmap", "one", "--type=json", "-p", `[{"op":"add","path":"/data/j","value":"2"}]`)
	assert.Equal(t, "1 2", ts.Kubectl(t, h, "", "get", "cm", "one", "-o", "jsonpath={.data.m} {.data.j}"))
	ts.Kubectl(t, h, "", "create", "deployment", "web", "--image=nginx:1", "--replicas=2")
	ts.Kubectl(t, h, "", "patch", "deployment", "web", "-p",
		`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}`)
	assert.ElementsMatch(t, []string{"nginx", "sidecar"},
		strings.Fields(ts.Kubectl(t, h, "", "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}")),
		"a strategic merge patch adds to the containers list by name")

	// scale and the status subresource
	ts.Kubectl(t, h, "", "scale", "deployment", "web", "--replicas=5")
	assert.Equal(t, "5", ts.Kubectl(t, h, "", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"))
	ts.Kubectl(t, h, "", "patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":5,"readyReplicas":3}}`)
	assert.Equal(t, "3", ts.Kubectl(t, h, "", "get", "deploy", "web", "--subresource=status", "-o", "jsonpath={.status.readyReplicas}"))

	// apply, client-side and server-side
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: v1\n"
	ts.Kubectl(t, h, cm, "apply", "-f", "-")
	ts.Kubectl(t, h, strings.Replace(cm, "k: v1", "k: v2", 1), "apply", "-f", "-")
	assert.Equal(t, "v2", ts.Kubectl(t, h, "", "get", "cm", "applied", "-o", "jsonpath={.data.k}"))
	ssa := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v\n"
	ts.Kubectl(t, h, ssa, "apply", "--server-side", "-f", "-")
	out, err := ts.KubectlErr(t, h, strings.Replace(ssa, "k: v", "k: other", 1), "apply", "--server-side", "--field-manager=intruder", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, out, "conflict", "a second field manager conflicts on the same field")

	// validation is kube-apiserver's own: its checks, its wording
	badPort := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"bad-port"},"spec":{"selector":{"matchLabels":{"app":"b"}},` +
		`"template":{"metadata":{"labels":{"app":"b"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":99999}]}]}}}}`
	out, err = ts.KubectlErr(t, h, badPort, "apply", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, "must be between 1 and 65535, inclusive")
	assert.Contains(t, out, "spec.template.spec.containers[0].ports[0].containerPort")

	// edit through $KUBE_EDITOR
	editor := filepath.Join(t.TempDir(), "editor.sh")
	require.NoError(t, os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/k: v2/k: edited/' \"$1\"\n"), 0o755))
	cmd := ts.KubectlCmd(t, h, "edit", "configmap", "applied")
	cmd.Env = append(cmd.Env, "KUBE_EDITOR="+editor)
	edited, err := cmd.CombinedOutput()
	require.NoError(t, err, string(edited))
	assert.Equal(t, "edited", ts.Kubectl(t, h, "", "get", "cm", "applied", "-o", "jsonpath={.data.k}"))

	// CRDs: apply, explain, custom resources with status
	ts.Kubectl(t, h, widgetCRD, "apply", "-f", "-")
	waitKubectl(t, ts, h, "widgets served", "get", "widgets")
	ts.Kubectl(t, h, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3}}`, "apply", "-f", "-")
	assert.Contains(t, ts.Kubectl(t, h, "", "explain", "widget.spec"), "How big the widget is.")
	assert.Contains(t, ts.Kubectl(t, h, "", "explain", "deployment.spec.replicas"), "Number of desired pods")
	ts.Kubectl(t, h, "", "patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"ready":true}}`)
	assert.Equal(t, "true", ts.Kubectl(t, h, "", "get", "widget", "w1", "-o", "jsonpath={.status.ready}"))
	resources := ts.Kubectl(t, h, "", "api-resources")
	for _, r := range []string{"configmaps", "namespaces", "secrets", "serviceaccounts", "deployments", "leases", "events", "widgets", "customresourcedefinitions"} {
		assert.Contains(t, resources, r)
	}

	// delete with a finalizer: the object stays until the finalizer goes
	ts.Kubectl(t, h, "", "patch", "configmap", "two", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
	ts.Kubectl(t, h, "", "delete", "configmap", "two", "--wait=false")
	assert.NotEmpty(t, ts.Kubectl(t, h, "", "get", "cm", "two", "-o", "jsonpath={.metadata.deletionTimestamp}"))
	ts.Kubectl(t, h, "", "patch", "configmap", "two", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := ts.KubectlErr(t, h, "", "get", "cm", "two")
		assert.Error(c, err)
		assert.Contains(c, out, "NotFound")
	}, 10*time.Second, kubectlTick, "configmap two gone")
}

// TestKubectlWatch sees a change through kubectl get -w.
func TestKubectlWatch(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "watcher"
	ts.Kubectl(t, h, "", "create", "configmap", "first")
	cmd := ts.KubectlCmd(t, h, "get", "configmaps", "-w", "-o", "name")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				require.True(t, ok, "kubectl get -w ended before %s", want)
				if l == want {
					return
				}
			case <-deadline:
				t.Fatalf("kubectl get -w did not print %s", want)
			}
		}
	}
	expect("configmap/first")
	ts.Kubectl(t, h, "", "create", "configmap", "second")
	expect("configmap/second")
}

// TestCRDIsolation: a CRD in one heaven does not exist in another.
func TestCRDIsolation(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	ts.Kubectl(t, "iso-a", widgetCRD, "apply", "-f", "-")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := ts.KubectlErr(t, "iso-a", "", "api-resources")
		require.NoError(c, err, out)
		assert.Contains(c, out, "widgets")
	}, 30*time.Second, kubectlTick, "widgets in iso-a")
	assert.NotContains(t, ts.Kubectl(t, "iso-b", "", "api-resources"), "widgets")
	out, err := ts.KubectlErr(t, "iso-b", "", "get", "widgets")
	require.Error(t, err)
	assert.Contains(t, out, "doesn't have a resource type")
	var crds struct{ Items []any }
	require.NoError(t, json.Unmarshal([]byte(ts.Kubectl(t, "iso-b", "", "get", "crds", "-o", "json")), &crds))
	assert.Empty(t, crds.Items)
}

// TestNamespaceDeletionCascades: deleting a namespace deletes what is in it,
// then the namespace.
func TestNamespaceDeletionCascades(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "cascade"
	ts.Kubectl(t, h, "", "create", "namespace", "doomed")
	ts.Kubectl(t, h, "", "-n", "doomed", "create", "configmap", "inside")
	ts.Kubectl(t, h, "", "-n", "doomed", "create", "deployment", "web", "--image=nginx")
	ts.Kubectl(t, h, widgetCRD, "apply", "-f", "-")
	waitKubectl(t, ts, h, "widgets served", "get", "widgets")
	ts.Kubectl(t, h, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"doomed"}}`, "apply", "-f", "-")
	ts.Kubectl(t, h, "", "delete", "namespace", "doomed", "--timeout=60s")
	out, err := ts.KubectlErr(t, h, "", "get", "namespace", "doomed")
	require.Error(t, err)
	assert.Contains(t, out, "NotFound")
	// git sees the branch's last commit a moment after it is acknowledged.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotContains(c, ts.Git(c, "ls-tree", "-r", "--name-only", h), "/doomed/")
	}, 5*time.Second, tick, "nothing of the namespace is left on the branch")
	out, err = ts.KubectlErr(t, h, "", "-n", "doomed", "create", "configmap", "late")
	require.Error(t, err, "a deleted namespace takes no new objects")
	assert.Contains(t, out, "not found")
}
