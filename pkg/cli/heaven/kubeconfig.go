package heaven

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clustersPrefix is where heaven-server serves heavens: /clusters/<name>.
const clustersPrefix = "/clusters/"

// previousContext is the context kubectl heaven keeps the server URL of the
// heaven before the last `use` in, for `use -`.
const previousContext = "heaven.dev/previous"

// heavenURL splits a cluster's server URL into heaven-server's base URL and
// the heaven's name ("" when the URL is not a heaven's).
func heavenURL(server string) (base, name string, err error) {
	u, err := url.Parse(server)
	if err != nil {
		return "", "", fmt.Errorf("server %q: %w", server, err)
	}
	path := strings.TrimSuffix(u.Path, "/")
	i := strings.LastIndex(path, clustersPrefix)
	if i < 0 || strings.Contains(path[i+len(clustersPrefix):], "/") {
		return "", "", nil
	}
	name = path[i+len(clustersPrefix):]
	u.Path = path[:i]
	return strings.TrimSuffix(u.String(), "/"), name, nil
}

// withHeaven is server's URL for heaven name on the same heaven-server.
func withHeaven(base, name string) string { return base + clustersPrefix + name }

// currentCluster returns the raw kubeconfig, the current context's name and
// its cluster.
func currentCluster(loader clientcmd.ClientConfig) (*clientcmdapi.Config, string, *clientcmdapi.Cluster, error) {
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, "", nil, err
	}
	name := raw.CurrentContext
	ctx, ok := raw.Contexts[name]
	if !ok {
		return nil, "", nil, fmt.Errorf("the current context %q is not in the kubeconfig", name)
	}
	cluster, ok := raw.Clusters[ctx.Cluster]
	if !ok {
		return nil, "", nil, fmt.Errorf("cluster %q of context %q is not in the kubeconfig", ctx.Cluster, name)
	}
	return &raw, name, cluster, nil
}
