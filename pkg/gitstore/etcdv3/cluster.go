package etcdv3

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

var _ pb.ClusterServer = (*clusterServer)(nil)

// clusterServer serves etcd's Cluster service for a cluster of one member
// whose client URLs are the addresses this server serves. Membership
// changes (MemberAdd, MemberRemove, MemberUpdate, MemberPromote) are
// Unimplemented: there are no peers; scale by running more servers on other
// repositories or branches.
type clusterServer struct {
	pb.UnimplementedClusterServer
	s *Server
}

func (c *clusterServer) MemberList(ctx context.Context, _ *pb.MemberListRequest) (*pb.MemberListResponse, error) {
	return &pb.MemberListResponse{
		Header: c.s.hdr.at(c.s.revision(ctx)),
		Members: []*pb.Member{{
			ID:         c.s.hdr.memberID,
			Name:       c.s.cfg.Name,
			ClientURLs: c.s.clientURLs(),
		}},
	}, nil
}

func (c *clusterServer) MemberAdd(context.Context, *pb.MemberAddRequest) (*pb.MemberAddResponse, error) {
	return nil, unimplemented("MemberAdd is not supported: a heaven server is a cluster of one member")
}

func (c *clusterServer) MemberRemove(context.Context, *pb.MemberRemoveRequest) (*pb.MemberRemoveResponse, error) {
	return nil, unimplemented("MemberRemove is not supported: a heaven server is a cluster of one member")
}

func (c *clusterServer) MemberUpdate(context.Context, *pb.MemberUpdateRequest) (*pb.MemberUpdateResponse, error) {
	return nil, unimplemented("MemberUpdate is not supported: a heaven server is a cluster of one member")
}

func (c *clusterServer) MemberPromote(context.Context, *pb.MemberPromoteRequest) (*pb.MemberPromoteResponse, error) {
	return nil, unimplemented("MemberPromote is not supported: a heaven server is a cluster of one member")
}
