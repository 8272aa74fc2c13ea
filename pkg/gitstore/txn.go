package gitstore

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// txnApplier evaluates one transaction against the writer's view of the
// index (which includes writes not yet durable) and applies its writes at
// revision rev = base+1. Writes of the txn are applied to the index as they
// happen so that later reads in the same txn see them, as in etcd.
type txnApplier struct {
	x       *index
	base    int64 // the revision before this txn
	load    valueLoader
	lessor  func(id int64) bool // does the lease exist?
	changes []change
}

func (a *txnApplier) rev() int64 { return a.base + 1 }

// readRev is the revision reads in the txn see: its own writes included.
func (a *txnApplier) readRev() int64 {
	if len(a.changes) > 0 {
		return a.rev()
	}
	return a.base
}

// txn runs the request. Validation errors are returned before anything is
// applied.
func (a *txnApplier) txn(r *pb.TxnRequest) (*pb.TxnResponse, error) {
	ok, err := a.compares(r.Compare)
	if err != nil {
		return nil, err
	}
	ops := r.Success
	if !ok {
		ops = r.Failure
	}
	if err := a.validate(ops); err != nil {
		return nil, err
	}
	resp := &pb.TxnResponse{Succeeded: ok, Responses: make([]*pb.ResponseOp, 0, len(ops))}
	for _, op := range ops {
		ro, err := a.op(op)
		if err != nil {
			return nil, err
		}
		resp.Responses = append(resp.Responses, ro)
	}
	return resp, nil
}

func (a *txnApplier) op(op *pb.RequestOp) (*pb.ResponseOp, error) {
	switch o := op.Request.(type) {
	case *pb.RequestOp_RequestRange:
		rr, err := rangeAt(a.x, o.RequestRange, a.readRev(), a.load)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseRange{ResponseRange: rr}}, nil
	case *pb.RequestOp_RequestPut:
		pr, err := a.put(o.RequestPut)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: pr}}, nil
	case *pb.RequestOp_RequestDeleteRange:
		dr, err := a.deleteRange(o.RequestDeleteRange)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseDeleteRange{ResponseDeleteRange: dr}}, nil
	case *pb.RequestOp_RequestTxn:
		tr, err := a.txn(o.RequestTxn)
		if err != nil {
			return nil, err
		}
		return &pb.ResponseOp{Response: &pb.ResponseOp_ResponseTxn{ResponseTxn: tr}}, nil
	}
	return &pb.ResponseOp{}, nil
}

func (a *txnApplier) put(p *pb.PutRequest) (*pb.PutResponse, error) {
	key := string(p.Key)
	prev := a.x.current(key)
	rec := &record{mod: a.rev(), create: a.rev(), version: 1, value: p.Value, loaded: true, lease: p.Lease}
	if prev != nil {
		rec.create, rec.version = prev.create, prev.version+1
	}
	if p.IgnoreValue || p.IgnoreLease {
		// validate() has checked that prev exists.
		if p.IgnoreValue {
			v, err := a.load(prev)
			if err != nil {
				return nil, err
			}
			rec.value = v
		}
		if p.IgnoreLease {
			rec.lease = prev.lease
		}
	}
	if rec.value == nil {
		rec.value = []byte{}
	}
	resp := &pb.PutResponse{}
	if p.PrevKv && prev != nil {
		kv, err := keyValue(key, prev, true, a.load)
		if err != nil {
			return nil, err
		}
		resp.PrevKv = kv
	}
	a.record(change{key: key, rec: rec, prev: prev})
	return resp, nil
}

func (a *txnApplier) deleteRange(d *pb.DeleteRangeRequest) (*pb.DeleteRangeResponse, error) {
	resp := &pb.DeleteRangeResponse{}
	var victims []change
	a.x.ascend(string(d.Key), string(d.RangeEnd), func(h *keyHistory) bool {
		if prev := h.latest(); prev != nil && !prev.tombstone() {
			victims = append(victims, change{key: h.key, rec: &record{mod: a.rev()}, prev: prev})
		}
		return true
	})
	for _, c := range victims {
		if d.PrevKv {
			kv, err := keyValue(c.key, c.prev, true, a.load)
			if err != nil {
				return nil, err
			}
			resp.PrevKvs = append(resp.PrevKvs, kv)
		}
		a.record(c)
	}
	resp.Deleted = int64(len(victims))
	return resp, nil
}

// record applies one change to the index at once, so that reads later in the
// txn see it; the revision's log entry is written by the caller.
func (a *txnApplier) record(c change) {
	a.x.appendRecord(c.key, c.rec)
	a.changes = append(a.changes, c)
}

// validate checks what etcd checks before applying: leases exist, ignore_*
// puts have a key, no key is written twice.
func (a *txnApplier) validate(ops []*pb.RequestOp) error {
	puts := map[string]bool{}
	var dels [][2]string
	var walk func(ops []*pb.RequestOp) error
	walk = func(ops []*pb.RequestOp) error {
		for _, op := range ops {
			switch o := op.Request.(type) {
			case *pb.RequestOp_RequestPut:
				p := o.RequestPut
				if len(p.Key) == 0 {
					return ErrEmptyKey
				}
				if p.IgnoreValue && len(p.Value) != 0 {
					return ErrValueProvided
				}
				if p.IgnoreLease && p.Lease != 0 {
					return ErrLeaseProvided
				}
				if (p.IgnoreValue || p.IgnoreLease) && a.x.current(string(p.Key)) == nil {
					return ErrKeyNotFound
				}
				if p.Lease != 0 && !a.lessor(p.Lease) {
					return ErrLeaseNotFound
				}
				if puts[string(p.Key)] {
					return ErrDuplicateKey
				}
				puts[string(p.Key)] = true
			case *pb.RequestOp_RequestDeleteRange:
				if len(o.RequestDeleteRange.Key) == 0 {
					return ErrEmptyKey
				}
				dels = append(dels, [2]string{string(o.RequestDeleteRange.Key), string(o.RequestDeleteRange.RangeEnd)})
			case *pb.RequestOp_RequestRange:
				if len(o.RequestRange.Key) == 0 {
					return ErrEmptyKey
				}
			case *pb.RequestOp_RequestTxn:
				t := o.RequestTxn
				// Only one branch of a nested txn runs; check both alike.
				if err := walk(t.Success); err != nil {
					return err
				}
				if err := walk(t.Failure); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(ops); err != nil {
		return err
	}
	for k := range puts {
		for _, d := range dels {
			if inRange(k, d[0], d[1]) {
				return ErrDuplicateKey
			}
		}
	}
	return nil
}

func inRange(k, key, end string) bool {
	switch end {
	case "":
		return k == key
	case "\x00":
		return k >= key
	}
	return k >= key && k < end
}

// compares evaluates all compares (true when every one holds).
func (a *txnApplier) compares(cs []*pb.Compare) (bool, error) {
	for _, c := range cs {
		ok, err := a.compare(c)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func (a *txnApplier) compare(c *pb.Compare) (bool, error) {
	var recs []*record
	a.x.ascend(string(c.Key), string(c.RangeEnd), func(h *keyHistory) bool {
		if r := h.at(a.readRev()); r != nil {
			recs = append(recs, r)
		}
		return true
	})
	if len(recs) == 0 {
		if c.Target == pb.Compare_VALUE {
			return false, nil
		}
		return compareRecord(c, &record{}, nil), nil
	}
	for _, r := range recs {
		var v []byte
		if c.Target == pb.Compare_VALUE {
			var err error
			if v, err = a.load(r); err != nil {
				return false, err
			}
		}
		if !compareRecord(c, r, v) {
			return false, nil
		}
	}
	return true, nil
}

func compareRecord(c *pb.Compare, r *record, value []byte) bool {
	var cmp int
	switch c.Target {
	case pb.Compare_VALUE:
		cmp = bytes.Compare(value, c.GetValue())
	case pb.Compare_VERSION:
		cmp = cmpInt(r.version, c.GetVersion())
	case pb.Compare_CREATE:
		cmp = cmpInt(r.create, c.GetCreateRevision())
	case pb.Compare_MOD:
		cmp = cmpInt(r.mod, c.GetModRevision())
	case pb.Compare_LEASE:
		cmp = cmpInt(r.lease, c.GetLease())
	}
	switch c.Result {
	case pb.Compare_EQUAL:
		return cmp == 0
	case pb.Compare_NOT_EQUAL:
		return cmp != 0
	case pb.Compare_GREATER:
		return cmp > 0
	case pb.Compare_LESS:
		return cmp < 0
	}
	return false
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
