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
	ts := startServer(t, "", nil)
	const h = "team-a"

	// create, get with label and field selectors, label, annotate
	ts.kubectl(h, "", "create", "configmap", "one", "--from-literal=a=b")
	ts.kubectl(h, "", "create", "configmap", "two", "--from-literal=a=c")
	ts.kubectl(h, "", "label", "configmap", "one", "tier=web")
	ts.kubectl(h, "", "annotate", "configmap", "one", "note=hello")
	assert.Equal(t, "one", ts.kubectl(h, "", "get", "cm", "-l", "tier=web", "-o", "jsonpath={.items[*].metadata.name}"))
	assert.Equal(t, "two", ts.kubectl(h, "", "get", "cm", "--field-selector", "metadata.name=two", "-o", "jsonpath={.items[*].metadata.name}"))
	assert.Equal(t, "hello", ts.kubectl(h, "", "get", "cm", "one", "-o", "jsonpath={.metadata.annotations.note}"))

	// patch: merge, json, strategic (on a built-in with a keyed list)
	ts.kubectl(h, "", "patch", "configmap", "one", "--type=merge", "-p", `{"data":{"m":"1"}}`)
	ts.kubectl(h, "", "patch", "configmap", "one", "--type=json", "-p", `[{"op":"add","path":"/data/j","value":"2"}]`)
	assert.Equal(t, "1 2", ts.kubectl(h, "", "get", "cm", "one", "-o", "jsonpath={.data.m} {.data.j}"))
	ts.kubectl(h, "", "create", "deployment", "web", "--image=nginx:1", "--replicas=2")
	ts.kubectl(h, "", "patch", "deployment", "web", "-p",
		`{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox"}]}}}}`)
	assert.ElementsMatch(t, []string{"nginx", "sidecar"},
		strings.Fields(ts.kubectl(h, "", "get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}")),
		"a strategic merge patch adds to the containers list by name")

	// scale and the status subresource
	ts.kubectl(h, "", "scale", "deployment", "web", "--replicas=5")
	assert.Equal(t, "5", ts.kubectl(h, "", "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"))
	ts.kubectl(h, "", "patch", "deployment", "web", "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":5,"readyReplicas":3}}`)
	assert.Equal(t, "3", ts.kubectl(h, "", "get", "deploy", "web", "--subresource=status", "-o", "jsonpath={.status.readyReplicas}"))

	// apply, client-side and server-side
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  k: v1\n"
	ts.kubectl(h, cm, "apply", "-f", "-")
	ts.kubectl(h, strings.Replace(cm, "k: v1", "k: v2", 1), "apply", "-f", "-")
	assert.Equal(t, "v2", ts.kubectl(h, "", "get", "cm", "applied", "-o", "jsonpath={.data.k}"))
	ssa := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v\n"
	ts.kubectl(h, ssa, "apply", "--server-side", "-f", "-")
	out, err := ts.kubectlErr(h, strings.Replace(ssa, "k: v", "k: other", 1), "apply", "--server-side", "--field-manager=intruder", "-f", "-")
	require.Error(t, err)
	assert.Contains(t, out, "conflict", "a second field manager conflicts on the same field")

	// edit through $KUBE_EDITOR
	editor := filepath.Join(t.TempDir(), "editor.sh")
	require.NoError(t, os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/k: v2/k: edited/' \"$1\"\n"), 0o755))
	cmd := ts.kubectlCmd(h, "edit", "configmap", "applied")
	cmd.Env = append(cmd.Env, "KUBE_EDITOR="+editor)
	edited, err := cmd.CombinedOutput()
	require.NoError(t, err, string(edited))
	assert.Equal(t, "edited", ts.kubectl(h, "", "get", "cm", "applied", "-o", "jsonpath={.data.k}"))

	// CRDs: apply, explain, custom resources with status
	ts.kubectl(h, widgetCRD, "apply", "-f", "-")
	eventually(t, 30*time.Second, "widgets served", func() (bool, error) {
		_, err := ts.kubectlErr(h, "", "get", "widgets")
		return err == nil, nil
	})
	ts.kubectl(h, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3}}`, "apply", "-f", "-")
	assert.Contains(t, ts.kubectl(h, "", "explain", "widget.spec"), "How big the widget is.")
	assert.Contains(t, ts.kubectl(h, "", "explain", "deployment.spec.replicas"), "Number of desired pods")
	ts.kubectl(h, "", "patch", "widget", "w1", "--subresource=status", "--type=merge", "-p", `{"status":{"ready":true}}`)
	assert.Equal(t, "true", ts.kubectl(h, "", "get", "widget", "w1", "-o", "jsonpath={.status.ready}"))
	resources := ts.kubectl(h, "", "api-resources")
	for _, r := range []string{"configmaps", "namespaces", "secrets", "serviceaccounts", "deployments", "leases", "events", "widgets", "customresourcedefinitions"} {
		assert.Contains(t, resources, r)
	}

	// delete with a finalizer: the object stays until the finalizer goes
	ts.kubectl(h, "", "patch", "configmap", "two", "--type=merge", "-p", `{"metadata":{"finalizers":["example.com/hold"]}}`)
	ts.kubectl(h, "", "delete", "configmap", "two", "--wait=false")
	assert.NotEmpty(t, ts.kubectl(h, "", "get", "cm", "two", "-o", "jsonpath={.metadata.deletionTimestamp}"))
	ts.kubectl(h, "", "patch", "configmap", "two", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	eventually(t, 10*time.Second, "configmap two gone", func() (bool, error) {
		out, err := ts.kubectlErr(h, "", "get", "cm", "two")
		return err != nil && strings.Contains(out, "NotFound"), nil
	})
}

// TestKubectlWatch sees a change through kubectl get -w.
func TestKubectlWatch(t *testing.T) {
	ts := startServer(t, "", nil)
	const h = "watcher"
	ts.kubectl(h, "", "create", "configmap", "first")
	cmd := ts.kubectlCmd(h, "get", "configmaps", "-w", "-o", "name")
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
	ts.kubectl(h, "", "create", "configmap", "second")
	expect("configmap/second")
}

// TestCRDIsolation: a CRD in one heaven does not exist in another.
func TestCRDIsolation(t *testing.T) {
	ts := startServer(t, "", nil)
	ts.kubectl("iso-a", widgetCRD, "apply", "-f", "-")
	eventually(t, 30*time.Second, "widgets in iso-a", func() (bool, error) {
		return strings.Contains(ts.kubectl("iso-a", "", "api-resources"), "widgets"), nil
	})
	assert.NotContains(t, ts.kubectl("iso-b", "", "api-resources"), "widgets")
	out, err := ts.kubectlErr("iso-b", "", "get", "widgets")
	require.Error(t, err)
	assert.Contains(t, out, "doesn't have a resource type")
	var crds struct{ Items []any }
	require.NoError(t, json.Unmarshal([]byte(ts.kubectl("iso-b", "", "get", "crds", "-o", "json")), &crds))
	assert.Empty(t, crds.Items)
}

// TestNamespaceDeletionCascades: deleting a namespace deletes what is in it,
// then the namespace.
func TestNamespaceDeletionCascades(t *testing.T) {
	ts := startServer(t, "", nil)
	const h = "cascade"
	ts.kubectl(h, "", "create", "namespace", "doomed")
	ts.kubectl(h, "", "-n", "doomed", "create", "configmap", "inside")
	ts.kubectl(h, "", "-n", "doomed", "create", "deployment", "web", "--image=nginx")
	ts.kubectl(h, widgetCRD, "apply", "-f", "-")
	eventually(t, 30*time.Second, "widgets served", func() (bool, error) {
		_, err := ts.kubectlErr(h, "", "get", "widgets")
		return err == nil, nil
	})
	ts.kubectl(h, `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"doomed"}}`, "apply", "-f", "-")
	ts.kubectl(h, "", "delete", "namespace", "doomed", "--timeout=60s")
	out, err := ts.kubectlErr(h, "", "get", "namespace", "doomed")
	require.Error(t, err)
	assert.Contains(t, out, "NotFound")
	// git sees the branch's last commit a moment after it is acknowledged.
	eventually(t, 5*time.Second, "nothing of the namespace is left on the branch", func() (bool, error) {
		return !strings.Contains(ts.git("ls-tree", "-r", "--name-only", h), "/doomed/"), nil
	})
	out, err = ts.kubectlErr(h, "", "-n", "doomed", "create", "configmap", "late")
	require.Error(t, err, "a deleted namespace takes no new objects")
	assert.Contains(t, out, "not found")
}
