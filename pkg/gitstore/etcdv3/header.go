package etcdv3

import (
	"context"
	"encoding/binary"
	"hash/fnv"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// raftTerm is constant: there is one member and no elections.
const raftTerm = 1

// header fills response headers the way etcd's does: cluster and member IDs,
// raft term, and the revision of the keyspace the request was for.
type header struct {
	clusterID uint64
	memberID  uint64
}

// newHeader derives stable, non-zero IDs from the repository and, in
// single-branch mode, the branch: every heaven looks like its own cluster.
func newHeader(repository, branch string) header {
	h := fnv.New64a()
	h.Write([]byte("heaven\x00" + repository + "\x00" + branch))
	cluster := h.Sum64() | 1
	h.Reset()
	h.Write(binary.BigEndian.AppendUint64(nil, cluster))
	h.Write([]byte("\x00member"))
	return header{clusterID: cluster, memberID: h.Sum64() | 1}
}

func (h header) fill(rh *pb.ResponseHeader) *pb.ResponseHeader {
	if rh == nil {
		rh = &pb.ResponseHeader{}
	}
	rh.ClusterId = h.clusterID
	rh.MemberId = h.memberID
	rh.RaftTerm = raftTerm
	return rh
}

func (h header) at(rev int64) *pb.ResponseHeader {
	return h.fill(&pb.ResponseHeader{Revision: rev})
}

// revision is the header revision for responses that concern no key (lease,
// maintenance): the served branch's revision in single-branch mode, 0 in
// prefix mode, where no keyspace-wide revision exists.
func (s *Server) revision(ctx context.Context) int64 {
	if s.rt.prefixMode() {
		return 0
	}
	b, err := s.backend.branch(ctx, s.rt.single)
	if err != nil {
		return 0
	}
	return b.Revision()
}
