package chaos

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithBuilds(m, "heaven-server"))
}

// serverBin returns the heaven-server binary TestMain built (a failed
// build ended the run before any test).
func serverBin() string {
	bin, _ := framework.Build("heaven-server")
	return bin
}

// server is heaven-server as a subprocess, on one port across restarts.
type server struct {
	dataDir, logPath string
	port             int
	portWaits        int // restarts that found the port taken (start)
	cmd              *exec.Cmd
	exited           chan error
}

func newServer(t *testing.T) *server {
	dir, err := os.MkdirTemp("", "heaven-chaos")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s for inspection", dir)
		} else {
			os.RemoveAll(dir)
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return &server{dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "server.log"), port: port}
}

func (s *server) url() string                 { return fmt.Sprintf("https://127.0.0.1:%d", s.port) }
func (s *server) repo() string                { return filepath.Join(s.dataDir, "heavens.git") }
func (s *server) kubeconfig() string          { return filepath.Join(s.dataDir, "admin.kubeconfig") }
func (s *server) heavenURL() string           { return s.url() + "/clusters/" + heaven }
func (s *server) pid() int                    { return s.cmd.Process.Pid }
func (s *server) fileURL() string             { return "file://" + s.repo() }
func (s *server) running() bool               { return s.cmd != nil && s.cmd.ProcessState == nil }
func (s *server) logHint() string             { return "server log: " + s.logPath }
func (s *server) startTimeout() time.Duration { return 90 * time.Second }

// start runs the server and waits until it is ready.
func (s *server) start(t *testing.T) {
	t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "---- start %s\n", time.Now().Format(time.RFC3339Nano))
	s.cmd = exec.Command(serverBin(), "--data-dir", s.dataDir, "--secure-port", strconv.Itoa(s.port),
		"--idle-timeout", "1h", "--cluster-controller=false")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	s.exited = make(chan error, 1)
	go func(cmd *exec.Cmd) { s.exited <- cmd.Wait() }(s.cmd)

	insecure := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(s.startTimeout())
	for {
		resp, err := insecure.Get(s.url() + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case werr := <-s.exited:
			// The port is the same across restarts, and another process
			// may hold it for a moment (an outgoing connection of the
			// tests beside this one takes its number as source port).
			if log, _ := os.ReadFile(s.logPath); bytes.HasSuffix(bytes.TrimSpace(log), []byte("address already in use")) && s.portWaits < 20 {
				s.portWaits++
				time.Sleep(500 * time.Millisecond) // let the other process let go of the port
				s.start(t)
				return
			}
			t.Fatalf("server exited while starting: %v; %s", werr, s.logHint())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready after %v; %s", s.startTimeout(), s.logHint())
		}
	}
}

// kill SIGKILLs the server and waits until it is gone.
func (s *server) kill(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	<-s.exited
}

// stop stops the server with SIGTERM and expects a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			t.Errorf("server exited with %v after SIGTERM; %s", err, s.logHint())
		}
	case <-time.After(60 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("server still running 60s after SIGTERM; %s", s.logHint())
	}
}

// kube is a client of the chaos heaven, with short timeouts so that a
// kill cuts requests off rather than hanging them.
func (s *server) kube(t *testing.T) kubernetes.Interface {
	t.Helper()
	return s.kubeTimeout(t, 10*time.Second)
}

// kubeTimeout is kube with another timeout: the first request after a
// restart opens the heaven, which reads its whole history (seconds after a
// long run).
func (s *server) kubeTimeout(t *testing.T, timeout time.Duration) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags(s.heavenURL(), s.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = timeout
	cfg.QPS, cfg.Burst = 500, 500
	return kubernetes.NewForConfigOrDie(cfg)
}

// cpuSeconds is the CPU time the server has used so far.
func (s *server) cpuSeconds(t *testing.T) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.pid()))
	if err != nil {
		t.Fatalf("reading the server's CPU time: %v", err)
	}
	// Fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100

// git runs the git CLI on the server's repository.
func (s *server) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", s.repo()}, args...)...)
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Chaos", "GIT_AUTHOR_EMAIL=chaos@example.com", "GIT_COMMITTER_NAME=Chaos", "GIT_COMMITTER_EMAIL=chaos@example.com")
}
