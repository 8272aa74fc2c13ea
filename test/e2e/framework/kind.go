package framework

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// kindProvider creates kind clusters with the kind CLI (KIND, else kind in
// PATH), one per cluster, from the node image KIND_NODE_IMAGE or kind's
// default. Kind needs Docker (or podman); its clusters have nodes, so Pods
// run.
type kindProvider struct{ kind string }

func (p *kindProvider) check() error {
	p.kind = os.Getenv("KIND")
	if p.kind == "" {
		p.kind = "kind"
	}
	path, err := exec.LookPath(p.kind)
	if err != nil {
		return &missingError{fmt.Sprintf("E2E_PROVIDER=kind: %v: install kind (https://kind.sigs.k8s.io) or set KIND", err)}
	}
	p.kind = path
	return nil
}

func (p *kindProvider) start(ctx context.Context, name, dir string) (*Cluster, error) {
	began := time.Now()
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	// Unique per run, so concurrent runs on one Docker host do not collide.
	kindName := "heaven-e2e-" + strings.ToLower(name) + "-" + hex.EncodeToString(suffix)
	c := &Cluster{
		Name:       name,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		logs:       []string{filepath.Join(dir, "kind.log")},
	}
	args := []string{"create", "cluster", "--name", kindName, "--kubeconfig", c.Kubeconfig, "--wait", "3m"}
	if image := os.Getenv("KIND_NODE_IMAGE"); image != "" {
		args = append(args, "--image", image)
	}
	created, err := p.run(ctx, c.logs[0], args...)
	if created {
		c.stop = func() error {
			// Not ctx: it has ended by the time a test stops its clusters.
			_, err := p.run(context.Background(), c.logs[0], "delete", "cluster", "--name", kindName, "--kubeconfig", c.Kubeconfig)
			return err
		}
	}
	if err != nil {
		return c, err
	}
	if err := c.loadConfig(); err != nil {
		return c, err
	}
	c.startup, c.phases = time.Since(began), "kind create cluster "+kindName
	return c, nil
}

// run runs kind with args, appending its output to logPath. started says
// whether kind ran at all (a failed create can leave a cluster to delete).
func (p *kindProvider) run(ctx context.Context, logPath string, args ...string) (started bool, err error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return false, err
	}
	defer log.Close()
	fmt.Fprintf(log, "$ kind %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, p.kind, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return cmd.Process != nil, fmt.Errorf("kind %s: %w (log: %s)", strings.Join(args, " "), err, logPath)
	}
	return true, nil
}
