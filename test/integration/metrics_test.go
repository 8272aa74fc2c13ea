package integration

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
)

// rest2http is an HTTP client with the admin's credentials.
func rest2http(ts *testServer) (*http.Client, error) {
	return rest.HTTPClientFor(ts.restConfig("root"))
}

// scrapeMetric reads one unlabelled metric from /metrics.
func scrapeMetric(ts *testServer, name string) (string, error) {
	c, err := rest2http(ts)
	if err != nil {
		return "", err
	}
	resp, err := c.Get(ts.url + "/metrics")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("metric %s not found", name)
}

func everything() labels.Selector { return labels.Everything() }
