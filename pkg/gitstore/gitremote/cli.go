package gitremote

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// The git CLI, for remotes whose protocol go-git's packages cannot speak
// without modules go.mod lacks (http(s)://, ssh://). git writes into the
// bare repository as a push from outside would; gitrepo sees its objects
// and refs at once. It is asked to fsync what it writes, and runs after
// gitrepo's held commits are flushed.

func cliFetch(ctx context.Context, repo *gitrepo.Repo, url, branch string, tracking plumbing.ReferenceName) (plumbing.Hash, error) {
	src := plumbing.NewBranchReferenceName(branch)
	out, err := gitCLI(ctx, repo, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", url, fmt.Sprintf("+%s:%s", src, tracking))
	if err != nil {
		if strings.Contains(out, "couldn't find remote ref") {
			return plumbing.ZeroHash, nil
		}
		return plumbing.ZeroHash, fmt.Errorf("fetching %s from %s: git fetch: %w: %s", branch, url, err, strings.TrimSpace(out))
	}
	return repo.Ref(tracking)
}

func cliPush(ctx context.Context, repo *gitrepo.Repo, url, branch string, head, old plumbing.Hash) error {
	dst := plumbing.NewBranchReferenceName(branch)
	lease := ""
	if !old.IsZero() {
		lease = old.String()
	}
	out, err := gitCLI(ctx, repo, "push", "--porcelain", "--force-with-lease="+dst.String()+":"+lease, url, head.String()+":"+dst.String())
	switch {
	case err == nil:
		return nil
	case strings.Contains(out, "[rejected]") || strings.Contains(out, "stale info") || strings.Contains(out, "non-fast-forward"):
		return fmt.Errorf("%w: %s: %s", ErrRejected, url, strings.TrimSpace(out))
	}
	return fmt.Errorf("pushing %s to %s: git push: %w: %s", branch, url, err, strings.TrimSpace(out))
}

func gitCLI(ctx context.Context, repo *gitrepo.Repo, args ...string) (string, error) {
	// git must see every commit made so far (gitrepo holds a Commit's
	// files for a few milliseconds).
	if err := repo.Flush(); err != nil {
		return "", err
	}
	all := append([]string{"--git-dir", repo.Dir(), "-c", "core.fsync=committed"}, args...)
	cmd := exec.CommandContext(ctx, "git", all...)
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
