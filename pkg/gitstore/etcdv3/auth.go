package etcdv3

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

var _ pb.AuthServer = (*authServer)(nil)

// authServer says that authentication is off. Every other Auth call (users,
// roles, enabling auth) is Unimplemented: heaven has no etcd users; put the
// endpoint on a unix socket or behind TLS instead.
type authServer struct {
	pb.UnimplementedAuthServer
	s *Server
}

func (a *authServer) AuthStatus(ctx context.Context, _ *pb.AuthStatusRequest) (*pb.AuthStatusResponse, error) {
	return &pb.AuthStatusResponse{Header: a.s.hdr.at(a.s.revision(ctx)), Enabled: false}, nil
}

func (a *authServer) AuthEnable(context.Context, *pb.AuthEnableRequest) (*pb.AuthEnableResponse, error) {
	return nil, unimplemented("etcd authentication is not supported")
}

func (a *authServer) Authenticate(context.Context, *pb.AuthenticateRequest) (*pb.AuthenticateResponse, error) {
	return nil, unimplemented("etcd authentication is not supported: connect without a user name")
}
