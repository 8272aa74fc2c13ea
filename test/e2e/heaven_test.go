package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/server"
)

// heavenServer is a heaven-server running in the test process.
type heavenServer struct {
	t       *testing.T
	dataDir string
	url     string
}

// startHeavenServer runs heaven-server on a free loopback port with its data
// in a temporary directory, until the test ends.
func startHeavenServer(t *testing.T) *heavenServer {
	t.Helper()
	o := server.NewOptions()
	o.DataDir = t.TempDir()
	o.SecurePort = 0
	require.Empty(t, o.Validate())
	cfg, err := o.Config()
	require.NoError(t, err)
	s, err := cfg.Complete().New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(60 * time.Second):
			t.Error("heaven-server did not stop within 60s")
		}
	})
	hs := &heavenServer{t: t, dataDir: o.DataDir, url: s.URL()}
	dyn := hs.dynamic(server.RootHeaven)
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(v1alpha1.HeavensResource).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	require.NoError(t, err, "the root heaven does not serve Heaven objects")
	return hs
}

func (hs *heavenServer) adminKubeconfig() string {
	return filepath.Join(hs.dataDir, "admin.kubeconfig")
}

// restConfig is the admin's client configuration for heaven.
func (hs *heavenServer) restConfig(heaven string) *rest.Config {
	hs.t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(hs.url+server.ClustersPrefix+heaven, hs.adminKubeconfig())
	require.NoError(hs.t, err)
	cfg.QPS, cfg.Burst = 100, 200
	return cfg
}

func (hs *heavenServer) kube(heaven string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(hs.restConfig(heaven))
}

func (hs *heavenServer) dynamic(heaven string) dynamic.Interface {
	return dynamic.NewForConfigOrDie(hs.restConfig(heaven))
}

func (hs *heavenServer) crds(heaven string) apiextensionsclient.Interface {
	return apiextensionsclient.NewForConfigOrDie(hs.restConfig(heaven))
}

// writeKubeconfig writes a kubeconfig for heaven with the admin's
// credentials, every cluster of it pointing at /clusters/<heaven>, as a
// syncer's --upstream-kubeconfig.
func (hs *heavenServer) writeKubeconfig(heaven string) string {
	hs.t.Helper()
	cfg, err := clientcmd.LoadFromFile(hs.adminKubeconfig())
	require.NoError(hs.t, err)
	for _, c := range cfg.Clusters {
		c.Server = hs.url + server.ClustersPrefix + heaven
	}
	path := filepath.Join(hs.t.TempDir(), heaven+".kubeconfig")
	require.NoError(hs.t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// createSyncTarget creates a SyncTarget in root, once root serves them
// (heaven-server installs its CRDs one after the other).
func (hs *heavenServer) createSyncTarget(st *v1alpha1.SyncTarget) {
	hs.t.Helper()
	st.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "SyncTarget"}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
	require.NoError(hs.t, err)
	client := hs.dynamic(server.RootHeaven).Resource(v1alpha1.SyncTargetsResource)
	syncEventually(hs.t, "SyncTarget "+st.Name+" created", func(ctx context.Context) error {
		_, err := client.Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return err // not served yet
		}
		require.NoError(hs.t, err)
		return nil
	})
}

// createCRD creates crd (if missing) and waits until it is established.
func createCRD(t *testing.T, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	crdClient := client.ApiextensionsV1().CustomResourceDefinitions()
	_, err := crdClient.Create(t.Context(), crd, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	syncEventually(t, "CRD "+crd.Name+" established", func(ctx context.Context) error {
		return crdEstablished(ctx, client, crd.Name)
	})
}

func crdEstablished(ctx context.Context, client apiextensionsclient.Interface, name string) error {
	got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range got.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return nil
		}
	}
	return errNotYet("CRD " + name + " not established")
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) }

// syncTimeout bounds every wait of the syncer tests.
const syncTimeout = 90 * time.Second

// syncEventually polls check until it succeeds, failing the test with its
// last error after syncTimeout.
func syncEventually(t *testing.T, what string, check func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, syncTimeout, true, func(ctx context.Context) (bool, error) {
		last = check(ctx)
		return last == nil, nil
	})
	require.NoError(t, err, "waiting for %s: %v", what, last)
}
