package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
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
	dir               string
	pki               *pki
	etcd              *embed.Etcd
	etcdLog           *os.File
	etcdURL           string
	apiServer         *process
	apiServerURL      string
	controllerManager *process
}

func (p *localProvider) start(ctx context.Context, name, dir string) (*Cluster, error) {
	began := time.Now()
	lc := &localCluster{dir: dir}
	c := &Cluster{
		Name:       name,
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		logs:       []string{filepath.Join(dir, "etcd.log"), filepath.Join(dir, "kube-apiserver.log"), filepath.Join(dir, "kube-controller-manager.log")},
		stop:       lc.stop,
	}
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
		return retryBind(func() (*process, error) { return lc.startAPIServer(ctx, p.apiServer, c) })
	})
	step("kube-controller-manager", func() error {
		return retryBind(func() (*process, error) { return lc.startControllerManager(ctx, p.controllerManager) })
	})
	step("controllers", func() error { return lc.waitForControllers(ctx, c) })
	c.startup, c.phases = time.Since(began), strings.Join(phases, ", ")
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
	err := stopAll(lc.controllerManager, lc.apiServer)
	if lc.etcd != nil {
		lc.etcd.Close()
	}
	if lc.etcdLog != nil {
		lc.etcdLog.Close()
	}
	return err
}

// startEtcd starts a single-member etcd on loopback ports the kernel picks.
// Its data is a test's: fsync is off.
func (lc *localCluster) startEtcd(ctx context.Context) error {
	log, err := os.Create(filepath.Join(lc.dir, "etcd.log"))
	if err != nil {
		return err
	}
	lc.etcdLog = log
	cfg := embed.NewConfig()
	cfg.Name = "e2e"
	cfg.Dir = filepath.Join(lc.dir, "etcd")
	cfg.UnsafeNoFsync = true
	// One member elects itself after an election timeout; a short one
	// saves most of a second.
	cfg.TickMs, cfg.ElectionMs = 10, 100
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{loopback}, []url.URL{loopback}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{loopback}, []url.URL{loopback}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// Warnings and errors only: etcd's info is a page per start.
	encoder := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(encoder, zapcore.AddSync(log), zap.WarnLevel)))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	lc.etcd = e
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(readyTimeout):
		return errors.New("not ready in time")
	case <-ctx.Done():
		return ctx.Err()
	}
	lc.etcdURL = "http://" + e.Clients[0].Addr().String()
	return nil
}

// startAPIServer starts kube-apiserver on a free port, writes the admin's
// kubeconfig for it into c, and waits until /readyz says ok.
func (lc *localCluster) startAPIServer(ctx context.Context, bin string, c *Cluster) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	lc.apiServerURL = "https://127.0.0.1:" + strconv.Itoa(port)
	certDir := filepath.Join(lc.dir, "kube-apiserver")
	p := lc.pki
	args := []string{
		"--etcd-servers=" + lc.etcdURL,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--advertise-address=" + advertiseAddress,
		"--cert-dir=" + certDir, // unused: the certificate is given
		"--tls-cert-file=" + p.APIServerCert,
		"--tls-private-key-file=" + p.APIServerKey,
		"--client-ca-file=" + p.CAFile,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.SAPub,
		"--service-account-signing-key-file=" + p.SAKey,
		"--v=1",
	}
	lc.apiServer, err = startProcess("kube-apiserver", bin, filepath.Join(lc.dir, "kube-apiserver.log"), args)
	if err != nil {
		return nil, err
	}
	if err := p.writeKubeconfig(c.Kubeconfig, c.Name, lc.apiServerURL, "admin", p.admin); err != nil {
		return lc.apiServer, err
	}
	if err := c.loadConfig(); err != nil {
		return lc.apiServer, err
	}
	config := c.RESTConfig()
	config.Timeout = 5 * time.Second // a check, not a wait
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return lc.apiServer, err
	}
	ready := func(ctx context.Context) error {
		_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err
	}
	return lc.apiServer, waitFor(ctx, lc.apiServer, ready)
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
