package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/heaven-dev/heaven/pkg/controllers/controllerheaven"
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
	access := synctargetctrl.Access{
		ServerURL: s.URL(),
		CAPEM:     s.pki.CAPEM(),
		CAPool:    s.pki.CAPool,
		Issue:     s.pki.IssueClientCert,
		Revoke:    s.pki.Revocations.Revoke,
		Connect:   synctargetctrl.ConnectKubeconfig,
	}
	ctrl := synctargetctrl.New(versioned.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg), synctargetctrl.Deps{
		Access:     access,
		Heaven:     s.heavenClient,
		Authorized: s.syncTargets.authorized,
	}, opts)
	go s.runControllerHeavens(ctx, cfg, access)
	ctrl.Run(ctx, 2)
}

// runControllerHeavens runs the controller of ControllerHeavens, part of
// the cluster controller: it creates their heavens and merges as their
// requesters and installs their controllers in the SyncTargets' clusters.
func (s *Server) runControllerHeavens(ctx context.Context, cfg *rest.Config, access synctargetctrl.Access) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "heaven-server/" + controllerheaven.ControllerName
	ctrl := controllerheaven.New(versioned.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg), controllerheaven.Deps{
		Access: access,
		AsUser: s.rootAs,
	})
	ctrl.Run(ctx, 2)
}

// rootAs is a client of the root heaven acting as u (impersonation, over
// the loopback connection): what it does is u's, under root's RBAC and
// admission.
func (s *Server) rootAs(u user.Info) (versioned.Interface, error) {
	base, err := s.loopbackHTTP()
	if err != nil {
		return nil, err
	}
	as := &http.Client{Timeout: base.Timeout, Transport: transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra(),
	}, base.Transport)}
	return versioned.NewForConfigAndClient(s.loopbackConfig(RootHeaven), as)
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
