package server

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	remotectrl "github.com/heaven-dev/heaven/pkg/controllers/remote"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/gitremote"
)

// startRemoteController runs the controller of Heavens' git remotes over
// the root heaven (cfg) until ctx ends. Like the merge controller, it
// reaches heavens through their branches, never their API servers.
func (s *Server) startRemoteController(ctx context.Context, cfg *rest.Config) {
	if !s.cfg.RemoteController {
		return
	}
	if s.repo == nil {
		klog.FromContext(ctx).Info("Git remotes of heavens need --storage=git; the remote controller does not run")
		return
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "heaven-server/" + remotectrl.ControllerName
	ctrl := remotectrl.New(versioned.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg), s.remoteGit())
	s.remoteCtrl.Store(ctrl)
	go ctrl.Run(ctx, 2)
}

// remoteGit is what the remote controller needs of the git store.
func (s *Server) remoteGit() remotectrl.Git {
	repo := s.repo
	git := repo.Git()
	return remotectrl.Git{
		Commits:    repo,
		IsAncestor: repo.IsAncestor,
		Head: func(name string) (plumbing.Hash, error) {
			h, _, err := repo.Head(name)
			return h, err
		},
		Create: func(name string, at plumbing.Hash) error {
			if err := gitstore.ValidateBranchName(name); err != nil {
				return err
			}
			// An open branch picks the new ref up like a push.
			return git.CompareAndSwapRef(plumbing.NewBranchReferenceName(name), at, plumbing.ZeroHash)
		},
		Open: func(ctx context.Context, name string) (gitstore.MergeTarget, error) {
			return repo.Branch(ctx, name)
		},
		Fetch: func(ctx context.Context, url, branch string, tracking, local plumbing.ReferenceName) (plumbing.Hash, error) {
			return gitremote.Fetch(ctx, git, url, branch, tracking, local)
		},
		Push: func(ctx context.Context, url, branch string, head, old plumbing.Hash) error {
			return gitremote.Push(ctx, git, url, branch, head, old)
		},
		ValidURL:  gitremote.ValidateURL,
		Ephemeral: s.ephemeralResource,
		Authorize: s.authorizeIn,
	}
}

// cloneRemote is the Heaven controller's Clone: a new heaven with a git
// remote starts from the remote's branch.
func (s *Server) cloneRemote(ctx context.Context, name string, remote *v1alpha1.Remote) (bool, error) {
	if s.repo == nil || !s.cfg.RemoteController {
		return false, nil
	}
	cloned, err := remotectrl.Clone(ctx, s.remoteGit(), name, remote)
	if err != nil {
		return false, fmt.Errorf("cloning %s of %s: %w", remote.Branch, remote.URL, err)
	}
	return cloned, nil
}
