package etcdv3

import (
	"context"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

var _ pb.KVServer = (*kvServer)(nil)

// kvServer serves etcd's KV service: validate as etcd does, route to the
// branch, call the store, give keys back their client form, fill the header.
type kvServer struct {
	pb.UnimplementedKVServer
	s *Server
}

// open returns the branch the routed request is for.
func (s *Server) open(ctx context.Context, sc *scope) (string, keyspace, error) {
	name, err := sc.done()
	if err != nil {
		return "", nil, err
	}
	b, err := s.backend.branch(ctx, name)
	if err != nil {
		return "", nil, err
	}
	return name, b, nil
}

func (k *kvServer) Range(ctx context.Context, r *pb.RangeRequest) (*pb.RangeResponse, error) {
	if err := checkRange(r); err != nil {
		return nil, err
	}
	sc := k.s.rt.newScope()
	sc.rangeRequest(r)
	name, b, err := k.s.open(ctx, sc)
	if err != nil {
		return nil, toGRPCError(ctx, "Range", err)
	}
	res, err := b.Range(ctx, toRange(r))
	if err != nil {
		return nil, toGRPCError(ctx, "Range", err)
	}
	resp := fromRange(res, k.s.rt.clientKeys(name))
	resp.Header = k.s.hdr.fill(resp.Header)
	return resp, nil
}

// RangeStream answers with one store Range at one revision, cut into chunks
// of about maxRequestBytes; the last chunk carries header, more and count,
// as etcd 3.7 does. Sort orders and revision filters are supported (etcd
// refuses them here; answering them costs nothing).
func (k *kvServer) RangeStream(r *pb.RangeRequest, stream grpc.ServerStreamingServer[pb.RangeStreamResponse]) error {
	resp, err := k.Range(stream.Context(), r)
	if err != nil {
		return err
	}
	kvs := resp.Kvs
	for len(kvs) > 0 {
		n, size := 0, 0
		for n < len(kvs) && (n == 0 || size+proto.Size(kvs[n]) <= k.s.cfg.MaxRequestBytes) {
			size += proto.Size(kvs[n])
			n++
		}
		if n == len(kvs) {
			break
		}
		if err := stream.Send(&pb.RangeStreamResponse{RangeResponse: &pb.RangeResponse{Kvs: kvs[:n]}}); err != nil {
			return err
		}
		kvs = kvs[n:]
	}
	last := &pb.RangeResponse{Header: resp.Header, Kvs: kvs, More: resp.More, Count: resp.Count}
	return stream.Send(&pb.RangeStreamResponse{RangeResponse: last})
}

func (k *kvServer) Put(ctx context.Context, r *pb.PutRequest) (*pb.PutResponse, error) {
	if err := checkPut(r); err != nil {
		return nil, err
	}
	if err := checkSize(r, k.s.cfg.MaxRequestBytes); err != nil {
		return nil, err
	}
	sc := k.s.rt.newScope()
	sc.putRequest(r)
	name, b, err := k.s.open(ctx, sc)
	if err != nil {
		return nil, toGRPCError(ctx, "Put", err)
	}
	res, err := b.Txn(ctx, &gitstore.Txn{Then: []gitstore.Op{{Put: toPut(r)}}})
	if err != nil {
		return nil, toGRPCError(ctx, "Put", err)
	}
	resp := &pb.PutResponse{Header: k.s.hdr.at(res.Revision), PrevKv: fromKV(res.Results[0].Put.PrevKV, k.s.rt.clientKeys(name))}
	return resp, nil
}

func (k *kvServer) DeleteRange(ctx context.Context, r *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	if err := checkDelete(r); err != nil {
		return nil, err
	}
	if err := checkSize(r, k.s.cfg.MaxRequestBytes); err != nil {
		return nil, err
	}
	sc := k.s.rt.newScope()
	sc.deleteRequest(r)
	name, b, err := k.s.open(ctx, sc)
	if err != nil {
		return nil, toGRPCError(ctx, "DeleteRange", err)
	}
	res, err := b.Txn(ctx, &gitstore.Txn{Then: []gitstore.Op{{Delete: toDelete(r)}}})
	if err != nil {
		return nil, toGRPCError(ctx, "DeleteRange", err)
	}
	del := res.Results[0].Delete
	resp := &pb.DeleteRangeResponse{Header: k.s.hdr.at(res.Revision), Deleted: del.Deleted,
		PrevKvs: fromKVs(del.PrevKVs, k.s.rt.clientKeys(name))}
	return resp, nil
}

func (k *kvServer) Txn(ctx context.Context, r *pb.TxnRequest) (*pb.TxnResponse, error) {
	if err := checkTxn(r, k.s.cfg.MaxTxnOps); err != nil {
		return nil, err
	}
	if err := checkSize(r, k.s.cfg.MaxRequestBytes); err != nil {
		return nil, err
	}
	sc := k.s.rt.newScope()
	sc.txnRequest(r)
	name, b, err := k.s.open(ctx, sc)
	if err != nil {
		return nil, toGRPCError(ctx, "Txn", err)
	}
	res, err := b.Txn(ctx, toTxn(r))
	if err != nil {
		return nil, toGRPCError(ctx, "Txn", err)
	}
	resp := fromTxn(res, k.s.rt.clientKeys(name))
	resp.Header = k.s.hdr.fill(resp.Header)
	return resp, nil
}

// Compact compacts the served branch. In prefix mode the request names no
// key, hence no branch, and a revision means nothing across branches: it is
// refused, and compaction is done per branch through a single-branch
// endpoint (heaven-server store --branch NAME).
func (k *kvServer) Compact(ctx context.Context, r *pb.CompactionRequest) (*pb.CompactionResponse, error) {
	if k.s.rt.prefixMode() {
		return nil, status.Error(codes.FailedPrecondition, "heaven: compaction names no branch and revisions are per branch: "+
			"compact each branch through a single-branch endpoint (heaven-server store --branch NAME)")
	}
	b, err := k.s.backend.branch(ctx, k.s.rt.single)
	if err != nil {
		return nil, toGRPCError(ctx, "Compact", err)
	}
	if err := b.Compact(ctx, r.Revision); err != nil {
		return nil, toGRPCError(ctx, "Compact", err)
	}
	return &pb.CompactionResponse{Header: k.s.hdr.at(b.Revision())}, nil
}
