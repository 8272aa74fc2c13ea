package etcdv3

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/version"
)

// code is the gRPC code of a clientv3 error (typed rpctypes errors or plain
// statuses).
func code(err error) codes.Code {
	if e, ok := err.(rpctypes.EtcdError); ok {
		return e.Code()
	}
	return status.Code(err)
}

// TestStatusLetsKubernetesRequestWatchProgress: the version must be at
// least 3.5.13 for k8s.io/apiserver to use progress requests.
func TestStatusLetsKubernetesRequestWatchProgress(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ctx := testContext(t)
		put, err := c.Put(ctx, "/s", "1")
		require.NoError(t, err)
		st, err := c.Status(ctx, c.Endpoints()[0])
		require.NoError(t, err)
		v, err := version.ParseSemantic(st.Version)
		require.NoError(t, err)
		require.True(t, v.AtLeast(version.MustParseSemantic("3.5.13")), "version %s", st.Version)
		require.Equal(t, st.Header.MemberId, st.Leader)
		require.Empty(t, st.Errors)
		require.False(t, st.IsLearner)
		if tg.single {
			require.GreaterOrEqual(t, st.Header.Revision, put.Header.Revision)
			require.NotZero(t, st.RaftIndex)
		}
		if tg.name != "etcd" {
			require.Positive(t, st.DbSize, "DbSize is the repository's size")
		}

		alarms, err := c.AlarmList(ctx)
		require.NoError(t, err)
		require.Empty(t, alarms.Alarms)
	})
}

func TestMemberListHasOneMemberAtTheServedURL(t *testing.T) {
	forEachTarget(t, options{}, func(t *testing.T, tg target, c *clientv3.Client) {
		ml, err := c.MemberList(testContext(t))
		require.NoError(t, err)
		require.Len(t, ml.Members, 1)
		require.Equal(t, ml.Header.MemberId, ml.Members[0].ID)
		require.Equal(t, c.Endpoints(), ml.Members[0].ClientURLs)
	})
}

// TestUnsupportedCallsAnswerUnimplementedAtOnce (heaven only: etcd supports them).
func TestUnsupportedCallsAnswerUnimplementedAtOnce(t *testing.T) {
	c := newClient(t, startHeaven(t, Config{Branch: "main"}))
	m := pb.NewMaintenanceClient(c.ActiveConnection())
	cl := pb.NewClusterClient(c.ActiveConnection())
	auth := pb.NewAuthClient(c.ActiveConnection())
	cases := []struct {
		name string
		call func(ctx context.Context) error
		want codes.Code
	}{
		{"Hash", func(ctx context.Context) error { _, err := m.Hash(ctx, &pb.HashRequest{}); return err }, codes.Unimplemented},
		{"HashKV", func(ctx context.Context) error { _, err := m.HashKV(ctx, &pb.HashKVRequest{}); return err }, codes.Unimplemented},
		{"Snapshot", func(ctx context.Context) error {
			s, err := m.Snapshot(ctx, &pb.SnapshotRequest{})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		}, codes.Unimplemented},
		{"Downgrade", func(ctx context.Context) error {
			_, err := m.Downgrade(ctx, &pb.DowngradeRequest{Version: "3.5"})
			return err
		}, codes.Unimplemented},
		{"MoveLeader elsewhere", func(ctx context.Context) error {
			_, err := m.MoveLeader(ctx, &pb.MoveLeaderRequest{TargetID: 42})
			return err
		}, codes.FailedPrecondition},
		{"MemberAdd", func(ctx context.Context) error {
			_, err := cl.MemberAdd(ctx, &pb.MemberAddRequest{PeerURLs: []string{"http://10.0.0.1:2380"}})
			return err
		}, codes.Unimplemented},
		{"MemberRemove", func(ctx context.Context) error {
			_, err := cl.MemberRemove(ctx, &pb.MemberRemoveRequest{ID: 1})
			return err
		}, codes.Unimplemented},
		{"Authenticate", func(ctx context.Context) error {
			_, err := auth.Authenticate(ctx, &pb.AuthenticateRequest{Name: "root", Password: "x"})
			return err
		}, codes.Unimplemented},
		{"UserAdd", func(ctx context.Context) error {
			_, err := auth.UserAdd(ctx, &pb.AuthUserAddRequest{Name: "u"})
			return err
		}, codes.Unimplemented},
		{"Lock (not registered)", func(ctx context.Context) error {
			return c.ActiveConnection().Invoke(ctx, "/v3lockpb.Lock/Lock", &pb.RangeRequest{}, &pb.RangeResponse{})
		}, codes.Unimplemented},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			err := tc.call(ctx)
			require.Equal(t, tc.want, status.Code(err), "err: %v", err)
			require.Less(t, time.Since(start), time.Second)
		})
	}

	ctx := testContext(t)
	as, err := auth.AuthStatus(ctx, &pb.AuthStatusRequest{})
	require.NoError(t, err)
	require.False(t, as.Enabled)
	_, err = m.Defragment(ctx, &pb.DefragmentRequest{})
	require.NoError(t, err)
	health, err := healthpb.NewHealthClient(c.ActiveConnection()).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, health.Status)
}
