package builtin_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/builtin"
	"github.com/heaven-dev/heaven/pkg/merge"
)

func TestListRulesFromKubernetesOpenAPI(t *testing.T) {
	rules := map[string]merge.ListRule{}
	for _, r := range builtin.ListRules() {
		rules[r.Resource+" "+r.Path] = r
	}
	for _, tc := range []struct {
		key  string
		want merge.ListRule
	}{
		{"apps/deployments .spec.template.spec.containers", merge.ListRule{Type: merge.ListMap, Keys: []string{"name"}}},
		{"apps/deployments .spec.template.spec.containers.ports", merge.ListRule{Type: merge.ListMap, Keys: []string{"containerPort", "protocol"}}},
		{"apps/deployments .spec.template.spec.containers.env", merge.ListRule{Type: merge.ListMap, Keys: []string{"name"}}},
		{"apps/deployments .metadata.ownerReferences", merge.ListRule{Type: merge.ListMap, Keys: []string{"uid"}}},
		{"rbac.authorization.k8s.io/roles .rules", merge.ListRule{Type: merge.ListAtomic}},
	} {
		got, ok := rules[tc.key]
		if assert.True(t, ok, "no rule for %s", tc.key) {
			assert.Equal(t, tc.want.Type, got.Type, tc.key)
			assert.Equal(t, tc.want.Keys, got.Keys, tc.key)
		}
	}
}

// Two sides each add a host alias to a pod template: keyed by ip (as
// Kubernetes says), both stay without a conflict; the heuristic has no key
// for them (no "name") and takes the list as a whole, edited two ways.
func TestListRulesMergeHostAliases(t *testing.T) {
	deployment := func(aliases string) []byte {
		return []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},` +
			`"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx"}],"hostAliases":[` + aliases + `]}}}}`)
	}
	const key = "/apps/deployments/default/web"
	base := deployment(`{"ip":"10.0.0.1","hostnames":["one"]}`)
	target := deployment(`{"ip":"10.0.0.1","hostnames":["one"]},{"ip":"10.0.0.2","hostnames":["two"]}`)
	source := deployment(`{"ip":"10.0.0.1","hostnames":["one"]},{"ip":"10.0.0.3","hostnames":["three"]}`)

	without := merge.Merger{}.Merge(key, base, target, source)
	assert.False(t, without.Resolved, "the heuristic alone sees the list edited two ways")

	res := merge.Merger{Lists: builtin.ListRules()}.Merge(key, base, target, source)
	require.True(t, res.Resolved, "conflicts: %v", res.Conflicts)
	var got struct {
		Spec struct {
			Template struct {
				Spec struct {
					HostAliases []struct {
						IP string `json:"ip"`
					} `json:"hostAliases"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	require.NoError(t, json.Unmarshal(res.Value, &got))
	var ips []string
	for _, a := range got.Spec.Template.Spec.HostAliases {
		ips = append(ips, a.IP)
	}
	assert.ElementsMatch(t, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}, ips)
}
