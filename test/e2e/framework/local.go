package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/heaven-dev/heaven/test/etcdtest"
)

const (
	// serviceCIDR is every local cluster's service range, and serviceIP its
	// first address, the one of the kubernetes Service.
	serviceCIDR = "10.96.0.0/16"
	// advertiseAddress is what the kubernetes Service's endpoints say.
	// Nothing dials it (a local cluster has no nodes and no pods run), but it
	// must not be loopback, and setting it keeps kube-apiserver from looking
	// for a default route. 198.51.100.0/24 is reserved for documentation.
	advertiseAddress = "198.51.100.1"

	readyTimeout = 3 * time.Minute // kube-apiserver ready, kube-controller-manager healthy
	pollInterval = 100 * time.Millisecond
	bindAttempts = 3 // starts of a process whose port was taken meanwhile
)

var serviceIP = net.IPv4(10, 96, 0, 1)

// localProvider runs kube-apiserver and kube-controller-manager as
// subprocesses on an etcd embedded in the test process.
type localProvider struct {
	apiServer, controllerManager string
}

func (p *localProvider) check() (err error) {
	if p.apiServer, err = kubeAPIServer.path(); err != nil {
		return err
	}
	p.controllerManager, err = kubeControllerManager.path()
	return err
}

// localCluster is what runs for one local cluster.
type localCluster struct {
	dir          string
	cluster      *Cluster
	apiServerBin string
	pki          *pki
	etcd         *etcdtest.Server
	etcdLog      *os.File
	etcdURL      string
	// etcdArgs, if set, are kube-apiserver's etcd flags instead of
	// --etcd-servers=etcdURL (a kube-apiserver on a heaven's branch).
	etcdArgs     []string
	apiServerURL string
	// apiServerPort is kept across restarts of kube-apiserver, so that
	// clients (and kube-controller-manager) find it where it was.
	apiServerPort     int
	controllerManager *process

	// mu guards apiServer, which is nil while kube-apiserver is stopped.
	mu        sync.Mutex
	apiServer *process
}

func (p *localProvider) start(ctx context.Context, name, dir string) (*Cluster, error) {
	began := time.Now()
	lc := &localCluster{dir: dir, apiServerBin: p.apiServer}
	c := &Cluster{
		Name:       name,
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		logs:       []string{filepath.Join(dir, "etcd.log"), filepath.Join(dir, "kube-apiserver.log"), filepath.Join(dir, "kube-controller-manager.log")},
		stop:       lc.stop,
		apiServer:  lc,
	}
	lc.cluster = c
	var err error
	var phases []string
	step := func(what string, f func() error) {
		if err != nil {
			return
		}
		t := time.Now()
		if err = f(); err != nil {
			err = fmt.Errorf("%s: %w", what, err)
			return
		}
		phases = append(phases, fmt.Sprintf("%s %v", what, time.Since(t).Round(time.Millisecond)))
	}
	step("pki", func() (err error) {
		lc.pki, err = newPKI(dir, serviceIP)
		return err
	})
	step("etcd", func() error { return lc.startEtcd(ctx) })
	step("kube-apiserver", func() error {
		return retryBind(func() (*process, error) { return lc.startAPIServer(ctx, 0) })
	})
	step("kube-controller-manager", func() error {
		return retryBind(func() (*process, error) { return lc.startControllerManager(ctx, p.controllerManager) })
	})
	step("controllers", func() error { return lc.waitForControllers(ctx, c) })
	c.startup, c.phases = time.Since(began), strings.Join(phases, ", ")
	return c, err
}

// startAPIServerOnly runs kube-apiserver alone, with etcdArgs for its etcd.
func (p *localProvider) startAPIServerOnly(ctx context.Context, name, dir string, etcdArgs []string) (*Cluster, error) {
	began := time.Now()
	lc := &localCluster{dir: dir, apiServerBin: p.apiServer, etcdArgs: etcdArgs}
	c := &Cluster{
		Name:       name,
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		logs:       []string{filepath.Join(dir, "kube-apiserver.log")},
		stop:       lc.stop,
		apiServer:  lc,
	}
	lc.cluster = c
	var err error
	if lc.pki, err = newPKI(dir, serviceIP); err != nil {
		return c, err
	}
	err = retryBind(func() (*process, error) { return lc.startAPIServer(ctx, 0) })
	c.startup, c.phases = time.Since(began), "kube-apiserver"
	return c, err
}

// retryBind runs start, which starts a process and waits for it, again with
// another port if the process found its port taken.
func retryBind(start func() (*process, error)) error {
	for attempt := 1; ; attempt++ {
		p, err := start()
		if err == nil || p == nil || !p.bindFailed() || attempt == bindAttempts {
			return err
		}
	}
}

func (lc *localCluster) stop() error {
	lc.mu.Lock()
	apiServer := lc.apiServer
	lc.apiServer = nil
	lc.mu.Unlock()
	err := stopAll(lc.controllerManager, apiServer)
	if lc.etcd != nil {
		lc.etcd.Close()
	}
	if lc.etcdLog != nil {
		lc.etcdLog.Close()
	}
	return err
}

// startEtcd starts a single-member etcd on loopback, its warnings in
// etcd.log. Its data is a test's: fsync is off.
func (lc *localCluster) startEtcd(ctx context.Context) error {
	log, err := os.Create(filepath.Join(lc.dir, "etcd.log"))
	if err != nil {
		return err
	}
	lc.etcdLog = log
	lc.etcd, err = etcdtest.Start(ctx, etcdtest.Config{Name: "e2e", Dir: filepath.Join(lc.dir, "etcd"), Log: log})
	if err != nil {
		return err
	}
	lc.etcdURL = lc.etcd.URL
	return nil
}

// startAPIServer starts kube-apiserver on port (a free one if 0), writes
// the admin's kubeconfig for it, and waits until /readyz says ok.
func (lc *localCluster) startAPIServer(ctx context.Context, port int) (*process, error) {
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, err
		}
	}
	lc.apiServerPort = port
	lc.apiServerURL = "https://127.0.0.1:" + strconv.Itoa(port)
	certDir := filepath.Join(lc.dir, "kube-apiserver")
	p := lc.pki
	etcdArgs := lc.etcdArgs
	if etcdArgs == nil {
		etcdArgs = []string{"--etcd-servers=" + lc.etcdURL}
	}
	args := append(slices.Clone(etcdArgs),
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--advertise-address="+advertiseAddress,
		"--cert-dir="+certDir, // unused: the certificate is given
		"--tls-cert-file="+p.APIServerCert,
		"--tls-private-key-file="+p.APIServerKey,
		"--client-ca-file="+p.CAFile,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range="+serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.SAPub,
		"--service-account-signing-key-file="+p.SAKey,
		// On SIGTERM, end the watches (clients' and kube-controller-manager's)
		// and wait this long for them; by default the open watches keep
		// the HTTP server's shutdown waiting for a minute.
		"--shutdown-watch-termination-grace-period=5s",
		"--v=1",
	)
	// A restart appends to the log of the first start.
	apiServer, err := startProcess("kube-apiserver", lc.apiServerBin, filepath.Join(lc.dir, "kube-apiserver.log"), args)
	if err != nil {
		return nil, err
	}
	lc.mu.Lock()
	lc.apiServer = apiServer
	lc.mu.Unlock()
	// A restart keeps the URL: the kubeconfig and the configuration that
	// clients copy stay as they are.
	if c := lc.cluster; c.config == nil || c.config.Host != lc.apiServerURL {
		if err := p.writeKubeconfig(c.Kubeconfig, c.Name, lc.apiServerURL, "admin", p.admin); err != nil {
			return apiServer, err
		}
		if err := c.loadConfig(); err != nil {
			return apiServer, err
		}
	}
	return apiServer, lc.waitForAPIServer(ctx, apiServer)
}

// waitForAPIServer waits until kube-apiserver's /readyz says ok.
func (lc *localCluster) waitForAPIServer(ctx context.Context, apiServer *process) error {
	config := lc.cluster.RESTConfig()
	config.Timeout = 5 * time.Second // a check, not a wait
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ready := func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	return waitFor(ctx, apiServer, ready)
}

// stopAPIServer stops kube-apiserver; etcd and kube-controller-manager
// go on running.
func (lc *localCluster) stopAPIServer() error {
	lc.mu.Lock()
	apiServer := lc.apiServer
	lc.apiServer = nil
	lc.mu.Unlock()
	if apiServer == nil {
		return errors.New("kube-apiserver is not running")
	}
	return apiServer.stop()
}

// startAPIServerAgain starts kube-apiserver after stopAPIServer, on the
// same port and etcd, with the same certificates.
func (lc *localCluster) startAPIServerAgain(ctx context.Context) error {
	lc.mu.Lock()
	running := lc.apiServer != nil
	lc.mu.Unlock()
	if running {
		return errors.New("kube-apiserver is running")
	}
	_, err := lc.startAPIServer(ctx, lc.apiServerPort)
	return err
}

// startControllerManager starts kube-controller-manager on a free port, with
// every controller that is on by default, each with its own service account,
// and waits until /healthz says ok.
func (lc *localCluster) startControllerManager(ctx context.Context, bin string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p := lc.pki
	kubeconfig := filepath.Join(lc.dir, "kube-controller-manager.kubeconfig")
	if err := p.writeKubeconfig(kubeconfig, "local", lc.apiServerURL, "kube-controller-manager", p.kcm); err != nil {
		return nil, err
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + p.KCMCert,
		"--tls-private-key-file=" + p.KCMKey,
		"--controllers=*",
		"--use-service-account-credentials",
		"--root-ca-file=" + p.CAFile,
		"--service-account-private-key-file=" + p.SAKey,
		"--cluster-signing-cert-file=" + p.CAFile,
		"--cluster-signing-key-file=" + p.CAKeyFile,
		"--service-cluster-ip-range=" + serviceCIDR,
		"--leader-elect=false",
		// Building the controllers, each with its own service account's
		// token, takes about 100 requests: at the default 20 per second
		// that is 5s of client-side throttling before the first one runs.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--v=1",
	}
	lc.controllerManager, err = startProcess("kube-controller-manager", bin, filepath.Join(lc.dir, "kube-controller-manager.log"), args)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}},
	}
	defer client.CloseIdleConnections()
	healthz := "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	healthy := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, healthz, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", healthz, resp.Status)
		}
		return nil
	}
	return lc.controllerManager, waitFor(ctx, lc.controllerManager, healthy)
}

// waitForControllers waits until the controllers run: the service account
// controller has given namespace default its ServiceAccount. (Pods cannot be
// created in a namespace before that.)
func (lc *localCluster) waitForControllers(ctx context.Context, c *Cluster) error {
	client, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	return waitFor(ctx, lc.controllerManager, func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

// waitFor polls check until it succeeds, the process exits or readyTimeout
// passes; the error says which, with check's last error.
func waitFor(ctx context.Context, p *process, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, readyTimeout, true, func(ctx context.Context) (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		last = check(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last check: %v)", err, last)
	}
	return err
}

// freePort returns a loopback port nobody listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
