package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPolicyResolve(t *testing.T) {
	p := Policy{Default: PreferTarget, Rules: []PathRule{
		{Path: ".status", Resolution: PreferSource},
		{Path: ".metadata.labels", Resolution: Manual},
		{Resource: "apps/deployments", Path: ".status", Resolution: PreferTarget},
		{Resource: "core/secrets", Path: ".", Resolution: Manual},
		{Path: `.spec.containers[name="web"]`, Resolution: PreferSource},
	}}
	tests := []struct {
		resource, path string
		want           Resolution
	}{
		{"core/pods", ".status", PreferSource},
		{"core/pods", ".status.phase", PreferSource},
		{"core/pods", `.status.conditions[type="Ready"].status`, PreferSource},
		{"core/pods", ".statusx", PreferTarget},
		{"core/pods", ".spec", PreferTarget},
		{"core/pods", "", PreferTarget},
		{"core/pods", `.metadata.labels["app.kubernetes.io/name"]`, Manual},
		{"core/pods", ".metadata.labels.app", Manual},
		{"apps/deployments", ".status.replicas", PreferTarget},
		{"core/secrets", "", Manual},
		{"core/secrets", ".data.x", Manual},
		{"core/secrets", ".status", PreferSource},
		{"core/pods", `.spec.containers[name="web"].image`, PreferSource},
		{"core/pods", `.spec.containers[name="db"].image`, PreferTarget},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, p.Resolve(tt.resource, tt.path), "%s %s", tt.resource, tt.path)
	}
	assert.Equal(t, Manual, Policy{}.Resolve("core/pods", ".spec"), "the zero policy")
}

func TestPolicyValidate(t *testing.T) {
	assert.NoError(t, Policy{}.Validate())
	assert.NoError(t, Policy{Default: PreferSource, Rules: []PathRule{
		{Path: ".status", Resolution: PreferSource},
		{Resource: "apps/deployments", Path: ".status", Resolution: PreferTarget},
		{Path: "", Resolution: Manual},
	}}.Validate())
	err := Policy{Default: "Theirs", Rules: []PathRule{
		{Path: "status", Resolution: PreferSource},
		{Path: ".spec", Resolution: ""},
		{Resource: "deployments", Path: ".spec", Resolution: PreferSource},
		{Path: ".spec", Resolution: PreferTarget},
	}}.Validate()
	assert.ErrorContains(t, err, `default resolution "Theirs"`)
	assert.ErrorContains(t, err, `rule 0: path "status"`)
	assert.ErrorContains(t, err, `rule 1: resolution ""`)
	assert.ErrorContains(t, err, `rule 2: resource "deployments"`)
	assert.ErrorContains(t, err, `rule 3: another rule`)
}

// TestPolicyFallback: the fallback rules resolve what the rules leave, and
// yield to any rule that covers the conflict, however short its path.
func TestPolicyFallback(t *testing.T) {
	tests := []struct {
		name   string
		policy Policy
		path   string
		want   Resolution
	}{
		{"fallback", Policy{Fallback: KubernetesRules}, ".status.phase", PreferSource},
		{"default beyond the fallback", Policy{Fallback: KubernetesRules}, ".spec.replicas", Manual},
		{"managed fields stay each side's", Policy{Fallback: KubernetesRules}, ".metadata.managedFields", PreferTarget},
		{"a rule first", Policy{Fallback: KubernetesRules, Rules: []PathRule{{Path: ".", Resolution: PreferTarget}}}, ".status.phase", PreferTarget},
		{"the default is no rule", Policy{Default: PreferTarget, Fallback: KubernetesRules}, ".status.phase", PreferSource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.policy.Resolve("core/pods", tt.path))
		})
	}
}
