package etcdv3

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// The facade is the only place where etcd's wire types meet the store's
// own: requests (their keys already routed to store keys) become the
// store's types, and results become etcd's with keys in the client's form
// (clientKey: the branch prefix back in prefix mode).

// clientKeyFunc names a store key as the client knows it.
type clientKeyFunc func(key string) []byte

func toRange(r *pb.RangeRequest) *gitstore.RangeRequest {
	out := &gitstore.RangeRequest{
		Key: string(r.Key), End: string(r.RangeEnd), Revision: r.Revision, Limit: r.Limit,
		KeysOnly: r.KeysOnly, CountOnly: r.CountOnly,
		MinModRevision: r.MinModRevision, MaxModRevision: r.MaxModRevision,
		MinCreateRevision: r.MinCreateRevision, MaxCreateRevision: r.MaxCreateRevision,
	}
	// As etcd: a sort target without an order sorts ascending by it.
	if r.SortOrder != pb.RangeRequest_NONE || r.SortTarget != pb.RangeRequest_KEY {
		out.SortBy = sortTargets[r.SortTarget]
		out.Descending = r.SortOrder == pb.RangeRequest_DESCEND
	}
	return out
}

var sortTargets = map[pb.RangeRequest_SortTarget]gitstore.SortTarget{
	pb.RangeRequest_KEY:     gitstore.SortByKey,
	pb.RangeRequest_VERSION: gitstore.SortByVersion,
	pb.RangeRequest_CREATE:  gitstore.SortByCreateRevision,
	pb.RangeRequest_MOD:     gitstore.SortByModRevision,
	pb.RangeRequest_VALUE:   gitstore.SortByValue,
}

func toPut(p *pb.PutRequest) *gitstore.PutOp {
	return &gitstore.PutOp{Key: string(p.Key), Value: p.Value, Lease: p.Lease, PrevKV: p.PrevKv,
		IgnoreValue: p.IgnoreValue, IgnoreLease: p.IgnoreLease}
}

func toDelete(d *pb.DeleteRangeRequest) *gitstore.DeleteOp {
	return &gitstore.DeleteOp{Key: string(d.Key), End: string(d.RangeEnd), PrevKV: d.PrevKv}
}

func toTxn(t *pb.TxnRequest) *gitstore.Txn {
	out := &gitstore.Txn{If: make([]gitstore.Compare, len(t.Compare)), Then: toOps(t.Success), Else: toOps(t.Failure)}
	for i, c := range t.Compare {
		out.If[i] = gitstore.Compare{Key: string(c.Key), End: string(c.RangeEnd), Target: compareTargets[c.Target],
			Result: compareResults[c.Result], Value: c.GetValue()}
		switch c.Target {
		case pb.Compare_VERSION:
			out.If[i].Number = c.GetVersion()
		case pb.Compare_CREATE:
			out.If[i].Number = c.GetCreateRevision()
		case pb.Compare_MOD:
			out.If[i].Number = c.GetModRevision()
		case pb.Compare_LEASE:
			out.If[i].Number = c.GetLease()
		}
	}
	return out
}

var (
	compareTargets = map[pb.Compare_CompareTarget]gitstore.CompareTarget{
		pb.Compare_VERSION: gitstore.CompareVersion,
		pb.Compare_CREATE:  gitstore.CompareCreateRevision,
		pb.Compare_MOD:     gitstore.CompareModRevision,
		pb.Compare_VALUE:   gitstore.CompareValue,
		pb.Compare_LEASE:   gitstore.CompareLease,
	}
	compareResults = map[pb.Compare_CompareResult]gitstore.CompareResult{
		pb.Compare_EQUAL:     gitstore.Equal,
		pb.Compare_NOT_EQUAL: gitstore.NotEqual,
		pb.Compare_GREATER:   gitstore.Greater,
		pb.Compare_LESS:      gitstore.Less,
	}
)

func toOps(ops []*pb.RequestOp) []gitstore.Op {
	out := make([]gitstore.Op, 0, len(ops))
	for _, op := range ops {
		switch o := op.Request.(type) {
		case *pb.RequestOp_RequestRange:
			out = append(out, gitstore.Op{Range: toRange(o.RequestRange)})
		case *pb.RequestOp_RequestPut:
			out = append(out, gitstore.Op{Put: toPut(o.RequestPut)})
		case *pb.RequestOp_RequestDeleteRange:
			out = append(out, gitstore.Op{Delete: toDelete(o.RequestDeleteRange)})
		case *pb.RequestOp_RequestTxn:
			out = append(out, gitstore.Op{Txn: toTxn(o.RequestTxn)})
		}
	}
	return out
}

// fromKV renders a store KeyValue (nil for nil).
func fromKV(kv *gitstore.KeyValue, key clientKeyFunc) *mvccpb.KeyValue {
	if kv == nil {
		return nil
	}
	return &mvccpb.KeyValue{Key: key(kv.Key), CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
		Version: kv.Version, Value: kv.Value, Lease: kv.Lease}
}

func fromKVs(kvs []gitstore.KeyValue, key clientKeyFunc) []*mvccpb.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]*mvccpb.KeyValue, len(kvs))
	for i := range kvs {
		out[i] = fromKV(&kvs[i], key)
	}
	return out
}

// fromRange renders a range result; the caller fills in the header.
func fromRange(r *gitstore.RangeResult, key clientKeyFunc) *pb.RangeResponse {
	return &pb.RangeResponse{Header: &pb.ResponseHeader{Revision: r.Revision}, Kvs: fromKVs(r.KVs, key), Count: r.Count, More: r.More}
}

func fromTxn(t *gitstore.TxnResult, key clientKeyFunc) *pb.TxnResponse {
	out := &pb.TxnResponse{Header: &pb.ResponseHeader{Revision: t.Revision}, Succeeded: t.Succeeded,
		Responses: make([]*pb.ResponseOp, 0, len(t.Results))}
	for _, r := range t.Results {
		var op pb.ResponseOp
		switch {
		case r.Range != nil:
			op.Response = &pb.ResponseOp_ResponseRange{ResponseRange: fromRange(r.Range, key)}
		case r.Put != nil:
			op.Response = &pb.ResponseOp_ResponsePut{ResponsePut: &pb.PutResponse{PrevKv: fromKV(r.Put.PrevKV, key)}}
		case r.Delete != nil:
			op.Response = &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: &pb.DeleteRangeResponse{
				Deleted: r.Delete.Deleted, PrevKvs: fromKVs(r.Delete.PrevKVs, key)}}
		case r.Txn != nil:
			op.Response = &pb.ResponseOp_ResponseTxn{ResponseTxn: fromTxn(r.Txn, key)}
		}
		out.Responses = append(out.Responses, &op)
	}
	return out
}

func fromEvents(evs []gitstore.Event, key clientKeyFunc) []*mvccpb.Event {
	out := make([]*mvccpb.Event, len(evs))
	for i := range evs {
		ev := &evs[i]
		e := &mvccpb.Event{Type: mvccpb.PUT, Kv: fromKV(&ev.KV, key), PrevKv: fromKV(ev.PrevKV, key)}
		if ev.Type == gitstore.EventDelete {
			e.Type = mvccpb.DELETE
		}
		out[i] = e
	}
	return out
}
