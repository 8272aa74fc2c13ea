package gitstore

import "context"

// The common cases of Range and Txn, for callers that read or write one key
// (the merge and remote controllers, tools, tests).

// Get returns key at rev (0: the current revision), nil when absent, and the
// branch's revision.
func (b *Branch) Get(ctx context.Context, key string, rev int64) (*KeyValue, int64, error) {
	res, err := b.Range(ctx, &RangeRequest{Key: key, Revision: rev})
	if err != nil {
		return nil, 0, err
	}
	if len(res.KVs) == 0 {
		return nil, res.Revision, nil
	}
	return &res.KVs[0], res.Revision, nil
}

// Put writes key whatever its current version, and returns the revision of
// the write.
func (b *Branch) Put(ctx context.Context, key string, value []byte) (int64, error) {
	res, err := b.Txn(ctx, &Txn{Then: []Op{{Put: &PutOp{Key: key, Value: value}}}})
	if err != nil {
		return 0, err
	}
	return res.Revision, nil
}

// Delete deletes key if it exists and returns whether it did, and the
// branch's revision after.
func (b *Branch) Delete(ctx context.Context, key string) (bool, int64, error) {
	res, err := b.Txn(ctx, &Txn{Then: []Op{{Delete: &DeleteOp{Key: key}}}})
	if err != nil {
		return false, 0, err
	}
	return res.Results[0].Delete.Deleted > 0, res.Revision, nil
}
