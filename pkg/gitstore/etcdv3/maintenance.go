package etcdv3

import (
	"context"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
)

var _ pb.MaintenanceServer = (*maintenanceServer)(nil)

// EtcdVersion is the etcd version Status reports: the API level heaven
// speaks (etcd 3.6, plus 3.7's RangeStream). k8s.io/apiserver enables
// RequestWatchProgress for etcd >= 3.5.13 / 3.4.31.
const EtcdVersion = "3.6.0"

// maintenanceServer serves etcd's Maintenance service for a one-member
// "cluster" that is a git repository.
type maintenanceServer struct {
	pb.UnimplementedMaintenanceServer
	s    *Server
	size sizeCache
}

// Status reports the member as its own leader. Revision and raft indexes are
// the served branch's revision in single-branch mode and 0 in prefix mode,
// where revisions are per branch and no keyspace-wide one exists. DbSize is
// the repository's size on disk (Config.RepositoryPath).
func (m *maintenanceServer) Status(ctx context.Context, _ *pb.StatusRequest) (*pb.StatusResponse, error) {
	rev := m.s.revision(ctx)
	size := m.size.get(m.s.cfg.RepositoryPath)
	return &pb.StatusResponse{
		Header:           m.s.hdr.at(rev),
		Version:          EtcdVersion,
		StorageVersion:   EtcdVersion,
		DbSize:           size,
		DbSizeInUse:      size,
		Leader:           m.s.hdr.memberID,
		RaftIndex:        uint64(rev),
		RaftAppliedIndex: uint64(rev),
		RaftTerm:         raftTerm,
		DowngradeInfo:    &pb.DowngradeInfo{},
	}, nil
}

// Alarm: heaven raises no alarms (no space quota, no corruption check), so
// GET lists none and DEACTIVATE has nothing to do; ACTIVATE is refused.
func (m *maintenanceServer) Alarm(ctx context.Context, r *pb.AlarmRequest) (*pb.AlarmResponse, error) {
	if r.Action == pb.AlarmRequest_ACTIVATE {
		return nil, unimplemented("alarms cannot be raised by hand: heaven has none")
	}
	return &pb.AlarmResponse{Header: m.s.hdr.at(m.s.revision(ctx))}, nil
}

// Defragment is a successful no-op: there is no bbolt file to defragment
// (git gc is the analogue and is not run by this call).
func (m *maintenanceServer) Defragment(context.Context, *pb.DefragmentRequest) (*pb.DefragmentResponse, error) {
	return &pb.DefragmentResponse{Header: m.s.hdr.at(0)}, nil
}

// Hash and HashKV exist for comparing the members of a cluster; heaven has
// one member, and git commit IDs already identify the data.
func (m *maintenanceServer) Hash(context.Context, *pb.HashRequest) (*pb.HashResponse, error) {
	return nil, unimplemented("Hash is not supported: there is one member; compare git commit IDs instead")
}

func (m *maintenanceServer) HashKV(context.Context, *pb.HashKVRequest) (*pb.HashKVResponse, error) {
	return nil, unimplemented("HashKV is not supported: there is one member; compare git commit IDs instead")
}

// Snapshot would have to produce a bbolt file; the data is a git repository.
func (m *maintenanceServer) Snapshot(*pb.SnapshotRequest, grpc.ServerStreamingServer[pb.SnapshotResponse]) error {
	return unimplemented("Snapshot is not supported: back up the git repository instead (git clone --mirror or git bundle)")
}

// MoveLeader: the only member already leads; moving to itself is a no-op and
// any other target is not a member (etcd's "bad leader transferee").
func (m *maintenanceServer) MoveLeader(_ context.Context, r *pb.MoveLeaderRequest) (*pb.MoveLeaderResponse, error) {
	if r.TargetID != m.s.hdr.memberID {
		return nil, rpctypes.ErrGRPCBadLeaderTransferee
	}
	return &pb.MoveLeaderResponse{Header: m.s.hdr.at(0)}, nil
}

// Downgrade changes the cluster's storage version; heaven has one version.
func (m *maintenanceServer) Downgrade(context.Context, *pb.DowngradeRequest) (*pb.DowngradeResponse, error) {
	return nil, unimplemented("Downgrade is not supported: heaven speaks one etcd API version")
}

// sizeCache measures a directory at most every sizeCacheTTL: a repository
// can hold many files and Status is polled (kube-apiserver storage metrics).
type sizeCache struct {
	mu    sync.Mutex
	at    time.Time
	bytes int64
}

const sizeCacheTTL = 30 * time.Second

func (c *sizeCache) get(dir string) int64 {
	if dir == "" {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.at) < sizeCacheTTL {
		return c.bytes
	}
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			total += info.Size()
		}
		return nil
	})
	c.at, c.bytes = time.Now(), total
	return total
}
