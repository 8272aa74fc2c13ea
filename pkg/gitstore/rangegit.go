package gitstore

import (
	"context"
	"fmt"
	"slices"
)

// RangeCompacted answers a read at a revision before the compaction point
// (where Range says ErrCompacted) from the commit that holds it: every
// commit stays in git, so a heaven's list at any revision since its first
// commit keeps working (Kubernetes' resourceVersionMatch=Exact). The etcd
// API keeps etcd's answer instead. Git keeps values, not each key's revisions:
// a key read so has the revision read at as its create and mod revision,
// and version 1. Files of the commit that can't be served are left out, as
// the branch leaves them out. Only key order is kept (SortBy is ignored).
func (b *Branch) RangeCompacted(r *RangeRequest) (*RangeResult, error) {
	if r.Key == "" {
		return nil, ErrEmptyKey
	}
	if r.Revision <= 0 || r.Revision >= b.CompactRevision() {
		return b.Range(context.Background(), r)
	}
	commit, _, err := b.CommitAt(r.Revision)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCompacted, err) // before the first commit
	}
	values, err := (&Repository{git: b.git, opts: b.opts}).Snapshot(commit)
	if _, bad := IsFileErrors(err); err != nil && !bad {
		return nil, err
	}
	resp := &RangeResult{Revision: b.Revision()}
	if r.MinModRevision > r.Revision || r.MinCreateRevision > r.Revision ||
		r.MaxModRevision > 0 && r.MaxModRevision < r.Revision || r.MaxCreateRevision > 0 && r.MaxCreateRevision < r.Revision {
		return resp, nil
	}
	var keys []string
	for k := range values {
		if inRange(k, r.Key, r.End) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if r.Descending {
		slices.Reverse(keys)
	}
	resp.Count = int64(len(keys))
	if r.CountOnly {
		return resp, nil
	}
	if r.Limit > 0 && int64(len(keys)) > r.Limit {
		keys = keys[:r.Limit]
	}
	resp.More = int64(len(keys)) < resp.Count
	for _, k := range keys {
		kv := KeyValue{Key: k, CreateRevision: r.Revision, ModRevision: r.Revision, Version: 1}
		if !r.KeysOnly {
			kv.Value = values[k]
		}
		resp.KVs = append(resp.KVs, kv)
	}
	return resp, nil
}
