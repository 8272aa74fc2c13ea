package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Commands of this repository that tests run as processes are built once
// per test binary into a temporary directory, each in a directory of its
// own (one to put on PATH: kubectl finds plugins there), and removed when
// the tests end (RunWithBuilds).
var builds struct {
	mu   sync.Mutex
	dir  string
	done map[string]func() (string, error)
}

// Build builds cmd/<name> of this repository (once per test binary) and
// returns the binary's path. TestMain must run the tests with
// RunWithBuilds, which removes it.
func Build(name string) (string, error) {
	builds.mu.Lock()
	if builds.done == nil {
		builds.done = map[string]func() (string, error){}
	}
	build, ok := builds.done[name]
	if !ok {
		build = sync.OnceValues(func() (string, error) { return goBuild(name) })
		builds.done[name] = build
	}
	builds.mu.Unlock()
	return build()
}

func goBuild(name string) (string, error) {
	builds.mu.Lock()
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "heaven-test-bin")
		if err != nil {
			builds.mu.Unlock()
			return "", err
		}
		builds.dir = dir
	}
	dir := filepath.Join(builds.dir, name)
	builds.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	pkg := "github.com/heaven-dev/heaven/cmd/" + name
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v: %s", pkg, err, out)
	}
	return bin, nil
}

// RunWithBuilds builds the named commands (Build), runs m's tests, and
// removes every binary Build made: call it from TestMain. A failed build
// fails the run before any test.
func RunWithBuilds(m *testing.M, names ...string) int {
	defer func() {
		builds.mu.Lock()
		defer builds.mu.Unlock()
		if builds.dir != "" {
			os.RemoveAll(builds.dir)
		}
	}()
	for _, name := range names {
		if _, err := Build(name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return m.Run()
}
