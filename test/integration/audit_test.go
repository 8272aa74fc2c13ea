package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestAuditLogNamesTheHeaven: with kube-apiserver's audit flags, every
// heaven's requests are in one log, each event naming its heaven, as the
// user sent the request.
func TestAuditLogNamesTheHeaven(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources: [{group: "", resources: [configmaps]}]
- level: None
`), 0o600))
	logPath := filepath.Join(dir, "audit.log")
	ts := framework.StartHeavenServer(t, func(o *server.Options) {
		o.Audit.PolicyFile = policy
		o.Audit.LogOptions.Path = logPath
	})
	ts.Kubectl(t, "team-a", "", "create", "configmap", "a", "--from-literal=x=1")
	ts.Kubectl(t, "team-b", "", "create", "configmap", "b", "--from-literal=x=1")
	alice := kubectlAs(t, ts, "alice")
	out, err := alice("team-a", "get", "configmap", "a")
	forbidden(t, out, err, "alice has no binding")

	type event struct {
		Annotations    map[string]string         `json:"annotations"`
		RequestURI     string                    `json:"requestURI"`
		Verb           string                    `json:"verb"`
		User           struct{ Username string } `json:"user"`
		ResponseStatus struct{ Code int }        `json:"responseStatus"`
	}
	var events []event
	eventually(t, 10*time.Second, "the events are written", func() (bool, error) {
		events = nil
		f, err := os.Open(logPath)
		if err != nil {
			return false, nil
		}
		defer f.Close()
		lines := bufio.NewScanner(f)
		lines.Buffer(nil, 1<<20)
		for lines.Scan() {
			var ev event
			if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
				return false, err
			}
			events = append(events, ev)
		}
		return len(events) >= 3, lines.Err()
	})
	found := map[string]bool{}
	for _, ev := range events {
		heaven := ev.Annotations["heaven.dev/heaven"]
		require.NotEmpty(t, heaven, "every event names its heaven: %+v", ev)
		assert.True(t, strings.HasPrefix(ev.RequestURI, "/clusters/"+heaven+"/api/v1/namespaces/default/configmaps"), "%s in %s", ev.RequestURI, heaven)
		found[heaven+" "+ev.Verb+" "+ev.User.Username+" "+strconv.Itoa(ev.ResponseStatus.Code)] = true
	}
	assert.True(t, found["team-a create heaven-admin 201"], "%v", found)
	assert.True(t, found["team-b create heaven-admin 201"], "%v", found)
	assert.True(t, found["team-a get alice 403"], "%v", found)
}
