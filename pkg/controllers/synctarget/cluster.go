package synctarget

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// clusterTimeout bounds every request to a physical cluster, so that an
// unreachable cluster holds a worker no longer.
const clusterTimeout = 30 * time.Second

// ConnectKubeconfig is a client of the physical cluster of a kubeconfig
// from a SyncTarget's Secret. The kubeconfig must carry everything inline:
// file paths, exec plugins and auth providers would make heaven-server
// read its own files or run commands for whoever writes the Secret.
func ConnectKubeconfig(kubeconfig []byte) (dynamic.Interface, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := checkInline(cfg); err != nil {
		return nil, err
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	rest.UserAgent = "heaven-server/" + ControllerName
	rest.Timeout = clusterTimeout
	return dynamic.NewForConfig(rest)
}

// checkInline rejects what a kubeconfig may reference outside itself.
func checkInline(cfg *clientcmdapi.Config) error {
	var errs []error
	for name, c := range cfg.Clusters {
		if c.CertificateAuthority != "" {
			errs = append(errs, fmt.Errorf("cluster %q: certificate-authority is a file; use certificate-authority-data", name))
		}
	}
	for name, a := range cfg.AuthInfos {
		switch {
		case a.ClientCertificate != "" || a.ClientKey != "" || a.TokenFile != "":
			errs = append(errs, fmt.Errorf("user %q: credentials in files; embed them (client-certificate-data, client-key-data, token)", name))
		case a.Exec != nil || a.AuthProvider != nil:
			errs = append(errs, fmt.Errorf("user %q: exec plugins and auth providers are not run by heaven-server", name))
		}
	}
	return errors.Join(errs...)
}

// kubeconfigOf reads the kubeconfig of a SyncTarget's Secret from the
// root heaven's cache.
func (c *Controller) kubeconfigOf(ref *v1alpha1.SecretKeyReference) ([]byte, error) {
	secret, err := c.secrets.Secrets(ref.Namespace).Get(ref.Name)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig Secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	key := ref.Key
	if key == "" {
		key = v1alpha1.DefaultKubeconfigKey
	}
	data, ok := secret.Data[key]
	if !ok || len(data) == 0 {
		return nil, fmt.Errorf("kubeconfig Secret %s/%s has no key %q", ref.Namespace, ref.Name, key)
	}
	return data, nil
}
