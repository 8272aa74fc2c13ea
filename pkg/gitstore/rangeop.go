package gitstore

import (
	"bytes"
	"sort"
)

// valueLoader returns the value of a record, reading it from git when it was
// not kept in memory.
type valueLoader func(*record) ([]byte, error)

// rangeAt answers a range read from x at revision rev (the request's own
// Revision, when set, must already be checked by the caller).
func rangeAt(x *index, r *RangeRequest, rev int64, load valueLoader) (*RangeResult, error) {
	type hit struct {
		key string
		rec *record
	}
	var hits []hit
	sorted := r.SortBy != SortByKey || r.Descending
	limit := int(r.Limit)
	count := 0
	x.ascend(r.Key, r.End, func(h *keyHistory) bool {
		rec := h.at(rev)
		if rec == nil || !passes(r, rec) {
			return true
		}
		count++
		// Without sorting or filters, the first limit hits are the answer;
		// the rest only count.
		if r.CountOnly || (!sorted && limit > 0 && len(hits) >= limit) {
			return true
		}
		hits = append(hits, hit{h.key, rec})
		return true
	})
	resp := &RangeResult{Revision: rev, Count: int64(count)}
	if r.CountOnly {
		return resp, nil
	}
	if sorted {
		less := sortLess(r.SortBy)
		sort.SliceStable(hits, func(i, j int) bool {
			if r.Descending {
				return less(hits[j].key, hits[j].rec, hits[i].key, hits[i].rec, load)
			}
			return less(hits[i].key, hits[i].rec, hits[j].key, hits[j].rec, load)
		})
	}
	if limit > 0 && len(hits) > limit {
		hits = hits[:limit]
	}
	resp.More = int64(len(hits)) < resp.Count
	resp.KVs = make([]KeyValue, 0, len(hits))
	for _, h := range hits {
		kv, err := keyValue(h.key, h.rec, !r.KeysOnly, load)
		if err != nil {
			return nil, err
		}
		resp.KVs = append(resp.KVs, kv)
	}
	return resp, nil
}

func passes(r *RangeRequest, rec *record) bool {
	return (r.MinModRevision == 0 || rec.mod >= r.MinModRevision) &&
		(r.MaxModRevision == 0 || rec.mod <= r.MaxModRevision) &&
		(r.MinCreateRevision == 0 || rec.create >= r.MinCreateRevision) &&
		(r.MaxCreateRevision == 0 || rec.create <= r.MaxCreateRevision)
}

func sortLess(target SortTarget) func(ka string, a *record, kb string, b *record, load valueLoader) bool {
	switch target {
	case SortByVersion:
		return func(_ string, a *record, _ string, b *record, _ valueLoader) bool { return a.version < b.version }
	case SortByCreateRevision:
		return func(_ string, a *record, _ string, b *record, _ valueLoader) bool { return a.create < b.create }
	case SortByModRevision:
		return func(_ string, a *record, _ string, b *record, _ valueLoader) bool { return a.mod < b.mod }
	case SortByValue:
		return func(_ string, a *record, _ string, b *record, load valueLoader) bool {
			va, _ := load(a)
			vb, _ := load(b)
			return bytes.Compare(va, vb) < 0
		}
	}
	return func(ka string, _ *record, kb string, _ *record, _ valueLoader) bool { return ka < kb }
}

// keyValue renders a record.
func keyValue(key string, rec *record, withValue bool, load valueLoader) (KeyValue, error) {
	kv := KeyValue{Key: key, CreateRevision: rec.create, ModRevision: rec.mod, Version: rec.version, Lease: rec.lease}
	if withValue {
		v, err := load(rec)
		if err != nil {
			return KeyValue{}, err
		}
		kv.Value = v
	}
	return kv, nil
}
