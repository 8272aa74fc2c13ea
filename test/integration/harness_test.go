// Package integration drives a real heaven-server, started in the test
// process (framework.StartHeavenServer), with client-go and with the real
// kubectl (built by `make tools`).
package integration

import (
	"bufio"
	"net/http"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/heaven-dev/heaven/pkg/server"
	"github.com/heaven-dev/heaven/test/e2e/framework"
)

const (
	// tick is how often a condition is checked while waiting for it.
	tick = 50 * time.Millisecond
	// kubectlTick is the same for conditions that run kubectl (a process
	// of its own, about 0.1 s of CPU each).
	kubectlTick = 200 * time.Millisecond
)

// adminHTTP is an HTTP client with the admin's credentials.
func adminHTTP(t require.TestingT, ts *framework.HeavenServer) *http.Client {
	c, err := rest.HTTPClientFor(ts.RESTConfig(server.RootHeaven))
	require.NoError(t, err)
	return c
}

// scrapeMetric reads one unlabelled metric from /metrics; the test (or the
// check of an EventuallyWithT) fails if it cannot.
func scrapeMetric(t require.TestingT, ts *framework.HeavenServer, name string) string {
	resp, err := adminHTTP(t, ts).Get(ts.URL() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "/metrics")
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return v
		}
	}
	require.NoError(t, s.Err())
	require.Fail(t, "metric "+name+" not found")
	return ""
}
