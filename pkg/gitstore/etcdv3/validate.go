package etcdv3

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/protobuf/proto"
)

// Request checks done before the store is touched, with etcd's answers
// (etcd's v3rpc/key.go). Duplicate keys in a txn are the store's to find.

func checkRange(r *pb.RangeRequest) error {
	if len(r.GetKey()) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if _, ok := pb.RangeRequest_SortOrder_name[int32(r.GetSortOrder())]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	if _, ok := pb.RangeRequest_SortTarget_name[int32(r.GetSortTarget())]; !ok {
		return rpctypes.ErrGRPCInvalidSortOption
	}
	return nil
}

func checkPut(r *pb.PutRequest) error {
	if len(r.GetKey()) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	if r.GetIgnoreValue() && len(r.GetValue()) != 0 {
		return rpctypes.ErrGRPCValueProvided
	}
	if r.GetIgnoreLease() && r.GetLease() != 0 {
		return rpctypes.ErrGRPCLeaseProvided
	}
	return nil
}

func checkDelete(r *pb.DeleteRangeRequest) error {
	if len(r.GetKey()) == 0 {
		return rpctypes.ErrGRPCEmptyKey
	}
	return nil
}

// checkTxn applies etcd's --max-txn-ops rule: the compares and each branch
// may hold at most maxOps entries, nested txns counting against what is left.
func checkTxn(r *pb.TxnRequest, maxOps int) error {
	n := max(len(r.GetCompare()), len(r.GetSuccess()), len(r.GetFailure()))
	if n > maxOps {
		return rpctypes.ErrGRPCTooManyOps
	}
	for _, c := range r.GetCompare() {
		if len(c.GetKey()) == 0 {
			return rpctypes.ErrGRPCEmptyKey
		}
	}
	for _, ops := range [][]*pb.RequestOp{r.GetSuccess(), r.GetFailure()} {
		for _, op := range ops {
			if err := checkOp(op, maxOps-n); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkOp(op *pb.RequestOp, maxOps int) error {
	switch o := op.GetRequest().(type) {
	case *pb.RequestOp_RequestRange:
		return checkRange(o.RequestRange)
	case *pb.RequestOp_RequestPut:
		return checkPut(o.RequestPut)
	case *pb.RequestOp_RequestDeleteRange:
		return checkDelete(o.RequestDeleteRange)
	case *pb.RequestOp_RequestTxn:
		return checkTxn(o.RequestTxn, maxOps)
	default:
		// An empty op: etcd answers "key not found".
		return rpctypes.ErrGRPCKeyNotFound
	}
}

// checkSize rejects writes larger than etcd's --max-request-bytes.
func checkSize(m proto.Message, maxBytes int) error {
	if proto.Size(m) > maxBytes {
		return rpctypes.ErrGRPCRequestTooLarge
	}
	return nil
}
