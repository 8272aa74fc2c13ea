package etcdv3

import (
	"bytes"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// router selects the branch a request is for and maps keys between the
// client's keyspace and the branch's.
//
// Single-branch mode (single != ""): the whole keyspace is that branch and
// keys pass through unchanged.
//
// Prefix mode: a client key is "/<branch><store key>" where the store key
// starts with "/": "/team-a/registry/x" is "/registry/x" in branch "team-a".
// A range end must stay inside "/<branch>/": it is either a key of the same
// branch, or "\x00" ("every key >= start") or the prefix end "/<branch>0",
// both of which are clamped to the end of the branch. An end that sorts
// before "/<branch>/" makes an empty range, as in etcd.
//
// keys, if set, renames keys below the branch (KeyMap): requests' keys
// after the branch is split off, responses' before it is put back.
type router struct {
	single string
	keys   *KeyMap
}

func (rt router) prefixMode() bool { return rt.single == "" }

// scope routes every key of one request and remembers the branch they name.
// The request is the handler's own decoded message; routing rewrites its keys
// in place. The first error wins.
type scope struct {
	rt     router
	branch string
	err    error
}

func (rt router) newScope() *scope {
	return &scope{rt: rt, branch: rt.single}
}

// done returns the branch the request is for.
func (sc *scope) done() (string, error) {
	if sc.err != nil {
		return "", sc.err
	}
	if sc.branch == "" {
		return "", invalidArgument("the request names no key, so no branch: in prefix mode every request needs keys of the form /<branch>/<key>")
	}
	return sc.branch, nil
}

func (sc *scope) fail(err error) {
	if sc.err == nil {
		sc.err = err
	}
}

// name records the branch of one key; all keys must agree.
func (sc *scope) name(branch string, key []byte) {
	switch {
	case sc.branch == "":
		sc.branch = branch
	case sc.branch != branch:
		sc.fail(invalidArgument("key %q is in branch %q but the request is for branch %q: one request must stay inside one branch", key, branch, sc.branch))
	}
}

// point routes a single key and returns the store key.
func (sc *scope) point(key []byte) []byte {
	k := sc.branchKey(key)
	if sc.err != nil || sc.rt.keys == nil {
		return k
	}
	s, err := sc.rt.keys.StoreKey(k)
	if err != nil {
		sc.fail(invalidArgument("%v", err))
		return k
	}
	return s
}

// interval routes [key, end) and returns the store key and end.
func (sc *scope) interval(key, end []byte) ([]byte, []byte) {
	k, e := sc.branchInterval(key, end)
	if sc.err != nil || sc.rt.keys == nil {
		return k, e
	}
	s, se, err := sc.rt.keys.StoreRange(k, e)
	if err != nil {
		sc.fail(invalidArgument("%v", err))
		return k, e
	}
	return s, se
}

// branchKey is key below its branch.
func (sc *scope) branchKey(key []byte) []byte {
	if !sc.rt.prefixMode() {
		return key
	}
	branch, rest, ok := splitBranch(key)
	if !ok {
		sc.fail(invalidArgument("key %q names no branch: in prefix mode keys are /<branch>/<key>", key))
		return key
	}
	sc.name(branch, key)
	return rest
}

// branchInterval is [key, end) below its branch.
func (sc *scope) branchInterval(key, end []byte) ([]byte, []byte) {
	if !sc.rt.prefixMode() {
		return key, end
	}
	skey := sc.branchKey(key)
	if sc.err != nil || len(end) == 0 {
		return skey, end
	}
	branch, _, _ := splitBranch(key)
	prefix := []byte("/" + branch + "/")
	switch {
	case len(end) == 1 && end[0] == 0:
		return skey, end
	case bytes.HasPrefix(end, prefix):
		return skey, end[len(prefix)-1:]
	case bytes.Equal(end, prefixEnd(prefix)):
		return skey, []byte{0}
	case bytes.Compare(end, prefix) < 0:
		// end < start: an empty range, kept empty.
		return skey, skey
	default:
		sc.fail(invalidArgument("range [%q, %q) leaves branch %q: in prefix mode a range ends inside %q, at %q, or at \"\\x00\"", key, end, branch, prefix, prefixEnd(prefix)))
		return skey, end
	}
}

// splitBranch splits "/<branch>/<rest>" into the branch and "/<rest>".
func splitBranch(key []byte) (branch string, rest []byte, ok bool) {
	if len(key) < 3 || key[0] != '/' {
		return "", nil, false
	}
	i := bytes.IndexByte(key[1:], '/')
	if i <= 0 {
		return "", nil, false
	}
	return string(key[1 : i+1]), key[i+1:], true
}

// prefixEnd is the smallest key after every key starting with prefix
// (clientv3.GetPrefixRangeEnd).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0}
}

func (sc *scope) rangeRequest(r *pb.RangeRequest) { r.Key, r.RangeEnd = sc.interval(r.Key, r.RangeEnd) }
func (sc *scope) putRequest(r *pb.PutRequest)     { r.Key = sc.point(r.Key) }
func (sc *scope) deleteRequest(r *pb.DeleteRangeRequest) {
	r.Key, r.RangeEnd = sc.interval(r.Key, r.RangeEnd)
}

func (sc *scope) txnRequest(r *pb.TxnRequest) {
	for _, c := range r.Compare {
		c.Key, c.RangeEnd = sc.interval(c.Key, c.RangeEnd)
	}
	for _, ops := range [][]*pb.RequestOp{r.Success, r.Failure} {
		for _, op := range ops {
			switch o := op.Request.(type) {
			case *pb.RequestOp_RequestRange:
				sc.rangeRequest(o.RequestRange)
			case *pb.RequestOp_RequestPut:
				sc.putRequest(o.RequestPut)
			case *pb.RequestOp_RequestDeleteRange:
				sc.deleteRequest(o.RequestDeleteRange)
			case *pb.RequestOp_RequestTxn:
				sc.txnRequest(o.RequestTxn)
			}
		}
	}
}

// clientKeys names the store keys of branch as this endpoint's clients know
// them: with the branch prefix back in prefix mode. The store's values are
// shared (with its index, with other watchers): results copy keys, never
// change them.
func (rt router) clientKeys(branch string) clientKeyFunc {
	if !rt.prefixMode() && rt.keys == nil {
		return func(key string) []byte { return []byte(key) }
	}
	return func(key string) []byte { return rt.clientKey(branch, []byte(key)) }
}

func (rt router) clientKey(branch string, key []byte) []byte {
	if rt.keys != nil {
		key = rt.keys.ClientKey(key)
	}
	if !rt.prefixMode() {
		return key
	}
	out := make([]byte, 0, 1+len(branch)+len(key))
	out = append(append(append(out, '/'), branch...), key...)
	return out
}

// leaseKeys returns the keys of a lease as this endpoint's clients name
// them: all of them in prefix mode, those of the served branch otherwise.
func (rt router) leaseKeys(keys []gitstore.LeaseKey) [][]byte {
	var out [][]byte
	for _, k := range keys {
		if rt.prefixMode() {
			out = append(out, rt.clientKey(k.Branch, k.Key))
		} else if k.Branch == rt.single {
			out = append(out, rt.clientKey(k.Branch, k.Key))
		}
	}
	return out
}
