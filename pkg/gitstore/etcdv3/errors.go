package etcdv3

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// storeErrors is the one table from store errors to the gRPC status etcd
// itself answers with (etcd's v3rpc/util.go), so that clients that compare
// with rpctypes errors (clientv3, the Kubernetes storage) see etcd's errors.
var storeErrors = []struct {
	store error
	grpc  error
}{
	{gitstore.ErrCompacted, rpctypes.ErrGRPCCompacted},
	{gitstore.ErrFutureRev, rpctypes.ErrGRPCFutureRev},
	{gitstore.ErrEmptyKey, rpctypes.ErrGRPCEmptyKey},
	{gitstore.ErrDuplicateKey, rpctypes.ErrGRPCDuplicateKey},
	{gitstore.ErrLeaseNotFound, rpctypes.ErrGRPCLeaseNotFound},
	{gitstore.ErrLeaseExists, rpctypes.ErrGRPCLeaseExist},
	{gitstore.ErrValueProvided, rpctypes.ErrGRPCValueProvided},
	{gitstore.ErrLeaseProvided, rpctypes.ErrGRPCLeaseProvided},
	{gitstore.ErrKeyNotFound, rpctypes.ErrGRPCKeyNotFound},
	{gitstore.ErrClosed, status.Error(codes.Unavailable, "heaven: the branch or repository is closed")},
	// Not an etcd error: a key whose branch component is not a valid
	// branch name (prefix mode).
	{gitstore.ErrInvalidBranch, nil},
}

// toGRPCError turns an error from the store (or the facade's own checks) into
// the status the client sees. Errors that are already gRPC statuses pass
// through. Context errors become Canceled / DeadlineExceeded. Anything the
// table does not know is an Internal error and is logged here, once.
func toGRPCError(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	for _, e := range storeErrors {
		if !errors.Is(err, e.store) {
			continue
		}
		if e.grpc == nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		return e.grpc
	}
	klog.FromContext(ctx).Error(err, "Store request failed", "method", method)
	return status.Error(codes.Internal, err.Error())
}

// unimplemented answers a call heaven does not support, saying why.
func unimplemented(format string, args ...any) error {
	return status.Errorf(codes.Unimplemented, "heaven: "+format, args...)
}

// invalidArgument answers a request heaven cannot route or accept.
func invalidArgument(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, "heaven: "+format, args...)
}
