package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binDir holds the binaries the tests build; TestMain removes it, so runs
// do not leave a server binary behind in the temporary directory each time.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "heaven-integration-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	return m.Run()
}

// goBuild builds pkg into dir/name.
func goBuild(dir, name, pkg string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build %s: %v: %s", pkg, err, out)
	}
	return bin, nil
}

// buildHeavenServer builds the heaven-server binary once per test run: the
// pre-receive hook the server installs runs it.
var buildHeavenServer = sync.OnceValues(func() (string, error) {
	return goBuild(filepath.Join(binDir, "server"), "heaven-server", "github.com/heaven-dev/heaven/cmd/heaven-server")
})

// buildPlugin builds kubectl-heaven once per test run and returns the
// directory that holds it, for PATH, where kubectl finds its plugins.
var buildPlugin = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(binDir, "plugin")
	_, err := goBuild(dir, "kubectl-heaven", "github.com/heaven-dev/heaven/cmd/kubectl-heaven")
	return dir, err
})
