package integration

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestControlPlaneGroups drives, with the real kubectl, the API groups a
// heaven serves with kube-apiserver's own registries: RBAC (with its
// escalation checks), the review APIs, quotas, certificates and the
// admission registration types.
func TestControlPlaneGroups(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "control"

	resources := ts.Kubectl(t, h, "", "api-resources", "-o", "name")
	for _, r := range []string{
		"roles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
		"validatingadmissionpolicies.admissionregistration.k8s.io", "validatingwebhookconfigurations.admissionregistration.k8s.io",
		"certificatesigningrequests.certificates.k8s.io", "resourcequotas", "subjectaccessreviews.authorization.k8s.io",
		"tokenreviews.authentication.k8s.io", "leases.coordination.k8s.io", "deployments.apps",
	} {
		assert.Contains(t, resources, r+"\n")
	}

	// RBAC as kubectl writes it, read back as kube-apiserver returns it.
	ts.Kubectl(t, h, "", "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps")
	ts.Kubectl(t, h, "", "create", "rolebinding", "alice-reads", "--role=cm-reader", "--user=alice")
	ts.Kubectl(t, h, "", "create", "clusterrole", "cm-admin", "--verb=*", "--resource=configmaps")
	ts.Kubectl(t, h, "", "create", "clusterrolebinding", "bob-admin", "--clusterrole=cm-admin", "--user=bob")
	assert.Equal(t, "get list", ts.Kubectl(t, h, "", "get", "role", "cm-reader", "-o", "jsonpath={.rules[0].verbs[*]}"))
	assert.Equal(t, "alice", ts.Kubectl(t, h, "", "get", "rolebinding", "alice-reads", "-o", "jsonpath={.subjects[0].name}"))
	assert.Contains(t, ts.Kubectl(t, h, "", "get", "clusterrolebindings"), "bob-admin")
	out, err := ts.KubectlErr(t, h, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"bad"},`+
		`"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Pod","name":"cm-reader"},"subjects":[{"kind":"User","name":"alice"}]}`, "create", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, `roleRef.kind: Unsupported value: "Pod"`, "RBAC's own validation")

	// The review APIs.
	assert.Equal(t, "yes", strings.TrimSpace(ts.Kubectl(t, h, "", "auth", "can-i", "create", "configmaps")))
	assert.Contains(t, ts.Kubectl(t, h, "", "auth", "whoami"), "heaven-admin")

	// A quota, counted by Kubernetes' quota controller and enforced by its
	// admission plugin.
	ts.Kubectl(t, h, "", "create", "namespace", "quota")
	ts.Kubectl(t, h, "", "-n", "quota", "create", "quota", "small", "--hard=configmaps=2")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := ts.KubectlErr(t, h, "", "-n", "quota", "get", "quota", "small", "-o", "jsonpath={.status.used.configmaps}")
		assert.NoError(c, err)
		assert.Equal(c, "0", out)
	}, 30*time.Second, kubectlTick, "the quota controller counts the namespace's configmaps")
	ts.Kubectl(t, h, "", "-n", "quota", "create", "configmap", "one")
	ts.Kubectl(t, h, "", "-n", "quota", "create", "configmap", "two")
	out, err = ts.KubectlErr(t, h, "", "-n", "quota", "create", "configmap", "three")
	require.Error(t, err, out)
	assert.Contains(t, out, "exceeded quota: small")

	// A CertificateSigningRequest, validated upstream.
	out, err = ts.KubectlErr(t, h, `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"csr"},`+
		`"spec":{"request":"bm90IGEgQ1NS","signerName":"example.com/signer","usages":["client auth"]}}`, "create", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, "spec.request", "a CSR whose request is not a PEM certificate request is refused")

	// Stored as files of their storage version on the heaven's branch.
	assert.Contains(t, ts.Git(t, "show", h+":rbac.authorization.k8s.io/roles/default/cm-reader.json"), `"apiVersion": "rbac.authorization.k8s.io/v1"`)
}

// TestValidatingAdmissionPolicy denies, with a CEL policy applied by
// kubectl, ConfigMaps labelled forbidden=true; others pass.
func TestValidatingAdmissionPolicy(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "policies"
	ts.Kubectl(t, h, `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: no-forbidden
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
  validations:
  - expression: "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels) || object.metadata.labels['forbidden'] != 'true'"
    message: "forbidden configmaps are not allowed here"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: no-forbidden
spec:
  policyName: no-forbidden
  validationActions: [Deny]
`, "apply", "-f", "-")

	// The policy takes effect once admission has seen it: wait with
	// server-side dry runs, which store nothing.
	forbidden := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad","labels":{"forbidden":"true"}}}`
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := ts.KubectlErr(t, h, forbidden, "create", "--dry-run=server", "-f", "-")
		assert.Error(c, err)
		assert.Contains(c, out, "forbidden configmaps are not allowed here")
	}, 30*time.Second, kubectlTick, "the policy denies a labelled configmap")
	out, err := ts.KubectlErr(t, h, forbidden, "create", "-f", "-")
	require.Error(t, err, out)
	assert.Contains(t, out, `ValidatingAdmissionPolicy 'no-forbidden' with binding 'no-forbidden' denied request: forbidden configmaps are not allowed here`)
	ts.Kubectl(t, h, "", "create", "configmap", "fine", "--from-literal=a=b")
	_, err = ts.KubectlErr(t, h, "", "get", "configmap", "bad")
	assert.Error(t, err, "the denied configmap was not stored")
}

// TestValidatingWebhook calls a webhook server of the test, reached by URL
// with its CA bundle, for every ConfigMap created: it denies those named
// deny-*.
func TestValidatingWebhook(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "webhooks"
	calls := make(chan string, 100)
	webhook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		select {
		case calls <- review.Request.Name:
		default:
		}
		allowed := !strings.HasPrefix(review.Request.Name, "deny-")
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: allowed}
		if !allowed {
			review.Response.Result = &metav1.Status{Message: "the test's webhook says no to " + review.Request.Name}
		}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(webhook.Close)
	caBundle := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: webhook.Certificate().Raw}))

	ts.Kubectl(t, h, fmt.Sprintf(`{
  "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
  "metadata": {"name": "deny-named"},
  "webhooks": [{
    "name": "deny-named.test.heaven.dev", "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
    "clientConfig": {"url": %q, "caBundle": %q},
    "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]
  }]
}`, webhook.URL+"/validate", caBundle), "apply", "-f", "-")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		out, err := ts.KubectlErr(t, h, "", "create", "configmap", "deny-me", "--dry-run=server")
		assert.Error(c, err)
		assert.Contains(c, out, "the test's webhook says no to deny-me")
	}, 30*time.Second, kubectlTick, "the webhook denies deny-me")
	out, err := ts.KubectlErr(t, h, "", "create", "configmap", "deny-me")
	require.Error(t, err, out)
	assert.Contains(t, out, `admission webhook "deny-named.test.heaven.dev" denied the request: the test's webhook says no to deny-me`)
	ts.Kubectl(t, h, "", "create", "configmap", "allow-me")
	assert.Eventually(t, func() bool {
		for {
			select {
			case name := <-calls:
				if name == "allow-me" {
					return true
				}
			default:
				return false
			}
		}
	}, 10*time.Second, tick, "the webhook was asked about allow-me")
}

// TestOperatorManifest applies, with kubectl, what an operator's install
// manifest holds (namespace, service account, RBAC, CRD, config and
// Deployment), applies it again unchanged, and deletes it.
func TestOperatorManifest(t *testing.T) {
	ts := framework.StartHeavenServer(t, nil)
	const h = "operator"
	manifest, err := os.ReadFile(filepath.Join("testdata", "operator.yaml"))
	require.NoError(t, err)

	out := ts.Kubectl(t, h, string(manifest), "apply", "-f", "-")
	for _, created := range []string{
		"namespace/gadget-system created", "serviceaccount/gadget-operator created",
		"customresourcedefinition.apiextensions.k8s.io/gadgets.example.com created",
		"clusterrole.rbac.authorization.k8s.io/gadget-operator created",
		"clusterrolebinding.rbac.authorization.k8s.io/gadget-operator created",
		"role.rbac.authorization.k8s.io/gadget-leader-election created",
		"rolebinding.rbac.authorization.k8s.io/gadget-leader-election created",
		"configmap/gadget-config created", "deployment.apps/gadget-operator created",
	} {
		assert.Contains(t, out, created)
	}
	again := ts.Kubectl(t, h, string(manifest), "apply", "-f", "-")
	assert.Equal(t, 9, strings.Count(again, " unchanged"), again)
	assert.Equal(t, "gadget-operator", ts.Kubectl(t, h, "", "-n", "gadget-system", "get", "deploy", "gadget-operator",
		"-o", "jsonpath={.spec.template.spec.serviceAccountName}"))

	ts.Kubectl(t, h, string(manifest), "delete", "-f", "-", "--timeout=60s")
	out, err = ts.KubectlErr(t, h, "", "get", "clusterrole", "gadget-operator")
	require.Error(t, err)
	assert.Contains(t, out, "NotFound")
	out, err = ts.KubectlErr(t, h, "", "get", "namespace", "gadget-system")
	require.Error(t, err)
	assert.Contains(t, out, "NotFound")
}
