package server

import (
	"context"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	mergectrl "github.com/heaven-dev/heaven/pkg/controllers/automatedmerge"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// startMergeController runs the AutomatedMerge controller over the root
// heaven (cfg) until ctx ends. It reaches heavens through their git
// branches, never through their API servers: a stopped heaven is merged
// into without being started.
func (s *Server) startMergeController(ctx context.Context, cfg *rest.Config) {
	if !s.cfg.MergeController {
		return
	}
	if s.repo == nil {
		klog.FromContext(ctx).Info("AutomatedMerges need --storage=git; the merge controller does not run")
		return
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "heaven-server/" + mergectrl.ControllerName
	repo := s.repo
	ctrl := mergectrl.New(versioned.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg), mergectrl.Branches{
		Commits: repo,
		Head: func(_ context.Context, name string) (plumbing.Hash, error) {
			h, _, err := repo.Head(name)
			return h, err
		},
		Open: func(ctx context.Context, name string) (gitstore.MergeTarget, error) {
			return repo.Branch(ctx, name)
		},
		Ephemeral: s.ephemeralResource,
		Authorize: s.authorizeIn,
	})
	s.mergeCtrl.Store(ctrl)
	go ctrl.Run(ctx, 2)
}

// branchMoved is the git store's OnHead: merges from the branch run now,
// and so does the exchange with the heaven's git remote.
func (s *Server) branchMoved(branch string, head plumbing.Hash) {
	if ctrl := s.mergeCtrl.Load(); ctrl != nil {
		ctrl.BranchMoved(branch)
	}
	if ctrl := s.remoteCtrl.Load(); ctrl != nil {
		ctrl.BranchMoved(branch, head)
	}
}

// ephemeralResource says whether "<group or core>/<resource>" is one of
// --ephemeral-resources.
func (s *Server) ephemeralResource(resource string) bool {
	group, res, ok := strings.Cut(resource, "/")
	if !ok {
		return false
	}
	if group == "core" {
		group = ""
	}
	return s.ephemeral[schema.GroupResource{Group: group, Resource: res}]
}
