package etcdv3

import (
	"context"
	"errors"
	"io"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

var _ pb.LeaseServer = (*leaseServer)(nil)

// maxLeaseTTL is etcd's MaxLeaseTTL.
const maxLeaseTTL = 9_000_000_000

// leaseServer serves etcd's Lease service. Leases belong to the repository,
// not to a branch: a lease may hold keys in several branches.
type leaseServer struct {
	pb.UnimplementedLeaseServer
	s *Server
}

func (l *leaseServer) LeaseGrant(ctx context.Context, r *pb.LeaseGrantRequest) (*pb.LeaseGrantResponse, error) {
	if r.TTL > maxLeaseTTL {
		return nil, rpctypes.ErrGRPCLeaseTTLTooLarge
	}
	lease, err := l.s.backend.leaseGrant(r.ID, r.TTL)
	if err != nil {
		return nil, toGRPCError(ctx, "LeaseGrant", err)
	}
	return &pb.LeaseGrantResponse{Header: l.s.hdr.at(l.s.revision(ctx)), ID: lease.ID, TTL: lease.TTL}, nil
}

func (l *leaseServer) LeaseRevoke(ctx context.Context, r *pb.LeaseRevokeRequest) (*pb.LeaseRevokeResponse, error) {
	if err := l.s.backend.leaseRevoke(ctx, r.ID); err != nil {
		return nil, toGRPCError(ctx, "LeaseRevoke", err)
	}
	return &pb.LeaseRevokeResponse{Header: l.s.hdr.at(l.s.revision(ctx))}, nil
}

// LeaseTimeToLive answers TTL -1 for an unknown lease, as etcd does.
func (l *leaseServer) LeaseTimeToLive(ctx context.Context, r *pb.LeaseTimeToLiveRequest) (*pb.LeaseTimeToLiveResponse, error) {
	granted, remaining, keys, err := l.s.backend.leaseTimeToLive(r.ID, r.Keys)
	if errors.Is(err, gitstore.ErrLeaseNotFound) {
		return &pb.LeaseTimeToLiveResponse{Header: l.s.hdr.at(l.s.revision(ctx)), ID: r.ID, TTL: -1}, nil
	}
	if err != nil {
		return nil, toGRPCError(ctx, "LeaseTimeToLive", err)
	}
	return &pb.LeaseTimeToLiveResponse{
		Header:     l.s.hdr.at(l.s.revision(ctx)),
		ID:         r.ID,
		TTL:        remaining,
		GrantedTTL: granted,
		Keys:       l.s.rt.leaseKeys(keys),
	}, nil
}

func (l *leaseServer) LeaseLeases(ctx context.Context, _ *pb.LeaseLeasesRequest) (*pb.LeaseLeasesResponse, error) {
	ids := l.s.backend.leases()
	leases := make([]*pb.LeaseStatus, len(ids))
	for i, id := range ids {
		leases[i] = &pb.LeaseStatus{ID: id}
	}
	return &pb.LeaseLeasesResponse{Header: l.s.hdr.at(l.s.revision(ctx)), Leases: leases}, nil
}

// LeaseKeepAlive renews a lease per request; an unknown lease gets TTL 0, as
// in etcd. The stream ends with the client or when the server shuts down.
func (l *leaseServer) LeaseKeepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	errc := make(chan error, 1)
	go func() { errc <- l.keepAlive(stream) }()
	select {
	case err := <-errc:
		return err
	case <-stream.Context().Done():
		return stream.Context().Err()
	case <-l.s.stopc:
		return status.Error(codes.Unavailable, "heaven: server is shutting down")
	}
}

func (l *leaseServer) keepAlive(stream pb.Lease_LeaseKeepAliveServer) error {
	ctx := stream.Context()
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		// The header is taken before the renewal, as etcd does: a lease
		// revoked at revision n never looks renewed after n.
		resp := &pb.LeaseKeepAliveResponse{ID: req.ID, Header: l.s.hdr.at(l.s.revision(ctx))}
		ttl, err := l.s.backend.leaseKeepAlive(req.ID)
		switch {
		case errors.Is(err, gitstore.ErrLeaseNotFound):
			ttl = 0
		case err != nil:
			return toGRPCError(ctx, "LeaseKeepAlive", err)
		}
		resp.TTL = ttl
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
}
