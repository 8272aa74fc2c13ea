package framework

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// A binary the tests run: the environment variable that names it, else its
// file in <repo>/.cache/bin, built by a make target.
type binary struct {
	env, name, makeTarget string
}

var (
	kubeAPIServer         = binary{"KUBE_APISERVER", "kube-apiserver", "kube-binaries"}
	kubeControllerManager = binary{"KUBE_CONTROLLER_MANAGER", "kube-controller-manager", "kube-binaries"}
	kubeScheduler         = binary{"KUBE_SCHEDULER", "kube-scheduler", "kube-binaries"}
	kwok                  = binary{"KWOK", "kwok", "kwok"}
	kubectl               = binary{"KUBECTL", "kubectl", "tools"}
)

// path returns where the binary is, or a *missingError saying how to build it.
func (b binary) path() (string, error) {
	if p := os.Getenv(b.env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", &missingError{fmt.Sprintf("%s=%s: %v", b.env, p, err)}
		}
		return p, nil
	}
	p := filepath.Join(repoRoot(), ".cache", "bin", b.name)
	if _, err := os.Stat(p); err != nil {
		return "", &missingError{fmt.Sprintf("%s not found at %s: run `make %s` (or set %s)", b.name, p, b.makeTarget, b.env)}
	}
	return p, nil
}

// repoRoot is the root of the repository, found from this file's path.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// KubectlPath returns the real kubectl (KUBECTL, else the one `make tools`
// builds into .cache/bin). If there is none, the test is skipped, or fails
// when CI=true.
func KubectlPath(t testing.TB) string {
	t.Helper()
	p, err := kubectl.path()
	if err != nil {
		skipOrFail(t, err)
	}
	return p
}

// Kubectl runs the real kubectl against c as its admin and returns its
// standard output; the test fails if kubectl does.
func (c *Cluster) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), KubectlPath(t), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // kubectl's discovery cache
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}
