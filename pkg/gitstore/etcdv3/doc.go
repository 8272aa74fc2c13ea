// Package etcdv3 serves a gitstore.Repository over the etcd v3 gRPC API, so
// that unmodified etcd clients (clientv3, etcdctl, k8s.io/apiserver's etcd3
// storage, a stock kube-apiserver) can use it.
//
// # Services
//
// KV (Range, RangeStream, Put, DeleteRange, Txn, Compact), Watch, Lease and
// Cluster (MemberList) behave as etcd's. Maintenance reports a one-member
// cluster that is its own leader, at etcd version EtcdVersion, with no
// alarms; Defragment is a no-op; Hash, HashKV, Snapshot and Downgrade are
// Unimplemented (see maintenance.go for why). Auth reports authentication
// disabled and refuses everything else. Election and Lock are not registered
// (gRPC answers Unimplemented). The gRPC health service reports SERVING until
// Shutdown. Every refusal is immediate.
//
// Requests are checked as etcd checks them before the store is touched
// (empty keys, sort options, --max-txn-ops 128, --max-request-bytes 1.5 MiB,
// ignore_value / ignore_lease); store errors become etcd's gRPC errors in one
// table (errors.go).
//
// # Branches
//
// One endpoint serves one repository. In single-branch mode (Config.Branch)
// the whole keyspace is that branch and everything, Compact included, works
// as with etcd. In prefix mode the first path component of every key selects
// the branch: "/team-a/registry/x" is key "/registry/x" of branch "team-a";
// responses, events and lease key lists carry the client's full keys. All
// keys of one request (range ends, txn compares and operations, watch
// ranges) must be in one branch, else the request fails with InvalidArgument.
// A range end of "\x00" ("every key from here") or of "/team-a0" (the end of
// the prefix "/team-a/") is clamped to the end of the branch. A client that
// wants one heaven as its whole keyspace uses clientv3/namespace with the
// prefix "/team-a/" (its keys then need no leading slash); with "/team-a"
// every range works except "all my keys", which ends at "/team-b" and so
// crosses branches.
//
// Revisions are per branch. So, in prefix mode: Compact (whose request names
// no key) is refused with FailedPrecondition, compaction being done per
// branch through a single-branch endpoint; Status and other responses that
// concern no key report revision 0; and a watch stream whose watches span
// several branches answers a progress request per watch instead of once for
// the stream (see watch_progress.go).
//
// Response headers carry constant cluster and member IDs derived from the
// repository path (and the branch in single-branch mode), raft term 1 and the
// branch's revision.
package etcdv3
