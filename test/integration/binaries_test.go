package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/heaven-dev/heaven/test/e2e/framework"
)

// TestMain removes the binaries the tests build (framework.Build).
func TestMain(m *testing.M) {
	os.Exit(framework.RunWithBuilds(m))
}

// buildHeavenServer builds heaven-server: the pre-receive hook the server
// installs runs it.
func buildHeavenServer() (string, error) { return framework.Build("heaven-server") }

// buildPlugin builds kubectl-heaven and returns the directory that holds
// it, for PATH, where kubectl finds its plugins.
func buildPlugin() (string, error) {
	bin, err := framework.Build("kubectl-heaven")
	return filepath.Dir(bin), err
}
