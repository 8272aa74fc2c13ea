package server

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	synctargetctrl "github.com/heaven-dev/heaven/pkg/controllers/synctarget"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
)

// startClusterController runs the controller of SyncTargets over the
// root heaven (cfg) until ctx ends: it installs syncers in physical
// clusters, with credentials issued by this server's CA for their heaven
// only, and tracks their heartbeats.
func (s *Server) startClusterController(ctx context.Context, cfg *rest.Config) {
	if !s.cfg.ClusterController {
		return
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "heaven-server/" + synctargetctrl.ControllerName
	opts := synctargetctrl.DefaultOptions()
	opts.SyncerImage = s.cfg.SyncerImage
	ctrl := synctargetctrl.New(versioned.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg), synctargetctrl.Deps{
		ServerURL:  s.URL(),
		CAPEM:      s.pki.CAPEM(),
		CAPool:     s.pki.CAPool,
		Issue:      s.pki.IssueClientCert,
		Revoke:     s.pki.Revocations.Revoke,
		Connect:    synctargetctrl.ConnectKubeconfig,
		Heaven:     s.heavenClient,
		Authorized: s.syncTargets.authorized,
	}, opts)
	ctrl.Run(ctx, 2)
}

// heavenClient reaches heaven name from inside the process, starting it if
// needed; it keeps running until release.
func (s *Server) heavenClient(ctx context.Context, name string) (*rest.Config, func(), error) {
	if err := ValidateHeavenName(name); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", synctargetctrl.ErrNoHeaven, err)
	}
	_, release, err := s.heavens.acquire(ctx, name, true, true)
	if errors.Is(err, errUnknownHeaven) {
		return nil, nil, fmt.Errorf("%w: %s", synctargetctrl.ErrNoHeaven, name)
	}
	if err != nil {
		return nil, nil, err
	}
	return s.loopbackConfig(name), release, nil
}
