package gitstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
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
	resp, err := b.repo.RangeCommit(commit, r.Revision, r)
	if err == nil {
		resp.Revision = b.Revision()
	}
	return resp, err
}

// RangeCommit answers a range read from commit: every key gets rev as its
// create and mod revision (git keeps values, not each key's revisions),
// version 1, and the result's Revision is rev. Files that can't be served
// are left out. Only key order is kept (SortBy is ignored).
func (r *Repository) RangeCommit(commit plumbing.Hash, rev int64, req *RangeRequest) (*RangeResult, error) {
	values, err := r.Snapshot(commit)
	if _, bad := IsFileErrors(err); err != nil && !bad {
		return nil, err
	}
	resp := &RangeResult{Revision: rev}
	if req.MinModRevision > rev || req.MinCreateRevision > rev ||
		req.MaxModRevision > 0 && req.MaxModRevision < rev || req.MaxCreateRevision > 0 && req.MaxCreateRevision < rev {
		return resp, nil
	}
	var keys []string
	for k := range values {
		if inRange(k, req.Key, req.End) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if req.Descending {
		slices.Reverse(keys)
	}
	resp.Count = int64(len(keys))
	if req.CountOnly {
		return resp, nil
	}
	if req.Limit > 0 && int64(len(keys)) > req.Limit {
		keys = keys[:req.Limit]
	}
	resp.More = int64(len(keys)) < resp.Count
	for _, k := range keys {
		kv := KeyValue{Key: k, CreateRevision: rev, ModRevision: rev, Version: 1}
		if !req.KeysOnly {
			kv.Value = values[k]
		}
		resp.KVs = append(resp.KVs, kv)
	}
	return resp, nil
}
