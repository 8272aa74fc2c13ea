package gitstore

import "bytes"

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

// txn runs the transaction. Validation errors are returned before anything
// is applied.
func (a *txnApplier) txn(t *Txn) (*TxnResult, error) {
	ok, err := a.compares(t.If)
	if err != nil {
		return nil, err
	}
	ops := t.Then
	if !ok {
		ops = t.Else
	}
	if err := a.validate(ops); err != nil {
		return nil, err
	}
	resp := &TxnResult{Succeeded: ok, Results: make([]OpResult, 0, len(ops))}
	for _, op := range ops {
		ro, err := a.op(op)
		if err != nil {
			return nil, err
		}
		resp.Results = append(resp.Results, ro)
	}
	return resp, nil
}

func (a *txnApplier) op(op Op) (OpResult, error) {
	var out OpResult
	var err error
	switch {
	case op.Range != nil:
		out.Range, err = rangeAt(a.x, op.Range, a.readRev(), a.load)
	case op.Put != nil:
		out.Put, err = a.put(op.Put)
	case op.Delete != nil:
		out.Delete, err = a.deleteRange(op.Delete)
	case op.Txn != nil:
		out.Txn, err = a.txn(op.Txn)
	}
	return out, err
}

func (a *txnApplier) put(p *PutOp) (*PutResult, error) {
	prev := a.x.current(p.Key)
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
	resp := &PutResult{}
	if p.PrevKV && prev != nil {
		kv, err := keyValue(p.Key, prev, true, a.load)
		if err != nil {
			return nil, err
		}
		resp.PrevKV = &kv
	}
	a.record(change{key: p.Key, rec: rec, prev: prev})
	return resp, nil
}

func (a *txnApplier) deleteRange(d *DeleteOp) (*DeleteResult, error) {
	resp := &DeleteResult{}
	var victims []change
	a.x.ascend(d.Key, d.End, func(h *keyHistory) bool {
		if prev := h.latest(); prev != nil && !prev.tombstone() {
			victims = append(victims, change{key: h.key, rec: &record{mod: a.rev()}, prev: prev})
		}
		return true
	})
	for _, c := range victims {
		if d.PrevKV {
			kv, err := keyValue(c.key, c.prev, true, a.load)
			if err != nil {
				return nil, err
			}
			resp.PrevKVs = append(resp.PrevKVs, kv)
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
// puts have a key, no key is written twice. It is the one place the store
// checks a request; the etcd facade only checks what etcd's wire format
// allows that the store's types do not.
func (a *txnApplier) validate(ops []Op) error {
	puts := map[string]bool{}
	var dels [][2]string
	var walk func(ops []Op) error
	walk = func(ops []Op) error {
		for _, op := range ops {
			switch {
			case op.Put != nil:
				p := op.Put
				if p.Key == "" {
					return ErrEmptyKey
				}
				if p.IgnoreValue && len(p.Value) != 0 {
					return ErrValueProvided
				}
				if p.IgnoreLease && p.Lease != 0 {
					return ErrLeaseProvided
				}
				if (p.IgnoreValue || p.IgnoreLease) && a.x.current(p.Key) == nil {
					return ErrKeyNotFound
				}
				if p.Lease != 0 && !a.lessor(p.Lease) {
					return ErrLeaseNotFound
				}
				if puts[p.Key] {
					return ErrDuplicateKey
				}
				puts[p.Key] = true
			case op.Delete != nil:
				if op.Delete.Key == "" {
					return ErrEmptyKey
				}
				dels = append(dels, [2]string{op.Delete.Key, op.Delete.End})
			case op.Range != nil:
				if op.Range.Key == "" {
					return ErrEmptyKey
				}
			case op.Txn != nil:
				// Only one branch of a nested txn runs; check both alike.
				if err := walk(op.Txn.Then); err != nil {
					return err
				}
				if err := walk(op.Txn.Else); err != nil {
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
func (a *txnApplier) compares(cs []Compare) (bool, error) {
	for i := range cs {
		ok, err := a.compare(&cs[i])
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func (a *txnApplier) compare(c *Compare) (bool, error) {
	var recs []*record
	a.x.ascend(c.Key, c.End, func(h *keyHistory) bool {
		if r := h.at(a.readRev()); r != nil {
			recs = append(recs, r)
		}
		return true
	})
	if len(recs) == 0 {
		if c.Target == CompareValue {
			return false, nil
		}
		return compareRecord(c, &record{}, nil), nil
	}
	for _, r := range recs {
		var v []byte
		if c.Target == CompareValue {
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

func compareRecord(c *Compare, r *record, value []byte) bool {
	var cmp int
	switch c.Target {
	case CompareValue:
		cmp = bytes.Compare(value, c.Value)
	case CompareVersion:
		cmp = cmpInt(r.version, c.Number)
	case CompareCreateRevision:
		cmp = cmpInt(r.create, c.Number)
	case CompareModRevision:
		cmp = cmpInt(r.mod, c.Number)
	case CompareLease:
		cmp = cmpInt(r.lease, c.Number)
	}
	switch c.Result {
	case Equal:
		return cmp == 0
	case NotEqual:
		return cmp != 0
	case Greater:
		return cmp > 0
	case Less:
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
