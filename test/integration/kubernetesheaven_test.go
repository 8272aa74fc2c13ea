package integration

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestKubernetesHeaven drives a heaven of type kubernetes with the real
// kubectl as one drives kube-apiserver: pods, services with cluster IPs
// and node ports from the heaven's allocators, jobs, `kubectl get all`,
// kube-apiserver's validation words, and the type that can't change. A
// generic heaven next to it still serves only the generic API.
func TestKubernetesHeaven(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "kube"
	ts.Kubectl(t, "root", `{"apiVersion":"heaven.dev/v1alpha1","kind":"Heaven","metadata":{"name":"kube"},"spec":{"type":"kubernetes"}}`, "create", "-f", "-")
	waitHeavenReady(t, ts, h)

	resources := ts.Kubectl(t, h, "", "api-resources", "-o", "name")
	for _, r := range []string{"pods", "services", "nodes", "endpoints", "persistentvolumeclaims", "replicasets.apps",
		"statefulsets.apps", "daemonsets.apps", "jobs.batch", "cronjobs.batch", "endpointslices.discovery.k8s.io",
		"ingresses.networking.k8s.io", "networkpolicies.networking.k8s.io", "priorityclasses.scheduling.k8s.io",
		"poddisruptionbudgets.policy", "horizontalpodautoscalers.autoscaling", "storageclasses.storage.k8s.io",
		"roles.rbac.authorization.k8s.io", "customresourcedefinitions.apiextensions.k8s.io"} {
		assert.Contains(t, resources, r+"\n")
	}
	assert.NotContains(t, resources, "componentstatuses")
	assert.NotContains(t, ts.Kubectl(t, "generic", "", "api-resources", "-o", "name"), "pods\n", "a generic heaven serves no pods")

	// What kube-apiserver sets up: its namespaces, the default ServiceCIDR,
	// the system priority classes.
	waitKubectl(t, ts, h, "the kubernetes heaven's bootstrap objects", "get", "namespace/kube-public", "namespace/kube-node-lease",
		"servicecidr/kubernetes", "priorityclass/system-node-critical", "priorityclass/system-cluster-critical")
	assert.Equal(t, builtin.ServiceCIDR.String(), ts.Kubectl(t, h, "", "get", "servicecidr", "kubernetes", "-o", "jsonpath={.spec.cidrs[0]}"))

	// Pods need their ServiceAccount, which kube-controller-manager makes
	// (no controller manager runs here).
	out, err := ts.KubectlErr(t, h, "", "run", "web", "--image=nginx", "--port=80")
	require.Error(t, err, out)
	assert.Contains(t, out, `serviceaccount "default" not found`)
	ts.Kubectl(t, h, "", "create", "serviceaccount", "default")
	ts.Kubectl(t, h, "", "run", "web", "--image=nginx", "--port=80")
	assert.Equal(t, "default", ts.Kubectl(t, h, "", "get", "pod", "web", "-o", "jsonpath={.spec.serviceAccountName}"), "ServiceAccount admission")
	assert.Equal(t, "300", ts.Kubectl(t, h, "", "get", "pod", "web", "-o", "jsonpath={.spec.tolerations[0].tolerationSeconds}"), "DefaultTolerationSeconds admission")

	// kube-apiserver's validation, in its words.
	out, err = ts.KubectlErr(t, h, "", "run", "bad", "--image=nginx", "--port=99999")
	require.Error(t, err, out)
	assert.Contains(t, out, `spec.containers[0].ports[0].containerPort: Invalid value: 99999: must be between 1 and 65535, inclusive`)
	out, err = ts.KubectlErr(t, h, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"containers":[{"name":"A_B","image":"x"}]}}`, "create", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, `spec.containers[0].name: Invalid value: "A_B"`)

	// Services: a cluster IP from the ServiceCIDR, with its IPAddress; a
	// node port from kube-apiserver's range; a port taken is refused.
	ts.Kubectl(t, h, "", "create", "service", "clusterip", "web", "--tcp=80:80")
	ip := ts.Kubectl(t, h, "", "get", "service", "web", "-o", "jsonpath={.spec.clusterIP}")
	require.NotEmpty(t, ip)
	assert.True(t, builtin.ServiceCIDR.Contains(net.ParseIP(ip)), "cluster IP %s in %s", ip, builtin.ServiceCIDR.String())
	assert.Equal(t, "services/default/web", ts.Kubectl(t, h, "", "get", "ipaddress", ip, "-o", "jsonpath={.spec.parentRef.resource}/{.spec.parentRef.namespace}/{.spec.parentRef.name}"))
	ts.Kubectl(t, h, "", "create", "service", "nodeport", "np", "--tcp=80:80")
	port, err := strconv.Atoi(ts.Kubectl(t, h, "", "get", "service", "np", "-o", "jsonpath={.spec.ports[0].nodePort}"))
	require.NoError(t, err)
	assert.True(t, builtin.NodePortRange.Contains(port), "node port %d in %s", port, builtin.NodePortRange.String())
	out, err = ts.KubectlErr(t, h, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"np2"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":`+strconv.Itoa(port)+`}]}}`, "create", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, "provided port is already allocated")
	// Deleting a Service frees its IP.
	ts.Kubectl(t, h, "", "delete", "service", "web")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := ts.KubectlErr(t, h, "", "get", "ipaddress", ip)
		assert.Error(c, err, "IPAddress %s released", ip)
	}, 30*time.Second, kubectlTick)

	ts.Kubectl(t, h, "", "create", "job", "hello", "--image=busybox", "--", "echo", "hi")
	ts.Kubectl(t, h, "", "create", "deployment", "d", "--image=nginx", "--replicas=2")
	all := ts.Kubectl(t, h, "", "get", "all")
	for _, want := range []string{"pod/web", "service/np", "deployment.apps/d", "job.batch/hello"} {
		assert.Contains(t, all, want)
	}

	// Every object is a file of the heaven's branch.
	files := ts.Git(t, "ls-tree", "-r", "--name-only", h)
	for _, f := range []string{"core/pods/default/web.json", "core/services/default/np.json", "batch/jobs/default/hello.json",
		"networking.k8s.io/servicecidrs/kubernetes.json", "scheduling.k8s.io/priorityclasses/system-node-critical.json"} {
		assert.Contains(t, files, f)
	}

	// The type is for good.
	out, err = ts.KubectlErr(t, "root", "", "patch", "heaven", h, "--type=merge", "-p", `{"spec":{"type":"generic"}}`)
	require.Error(t, err, out)
	assert.Contains(t, out, "type is immutable")
	assert.Equal(t, "generic", ts.Kubectl(t, "root", "", "get", "heaven", "generic", "-o", "jsonpath={.spec.type}"), "a heaven created on first use is generic")

	// After a restart the heaven is still a kubernetes heaven, and its
	// allocators remember what is taken.
	require.NoError(t, ts.Stop())
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	require.NoError(t, ts.Start(ctx))
	out, err = ts.KubectlErr(t, h, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"np3"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":`+strconv.Itoa(port)+`}]}}`, "create", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, "provided port is already allocated")
	assert.True(t, strings.Contains(ts.Kubectl(t, h, "", "get", "pods"), "web"))
}
