package etcdv3

import (
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
)

// invalidWatchID is clientv3.InvalidWatchID: the watch ID of failed
// creations and of progress notifications for the whole stream.
const invalidWatchID = -1

// A client's progress request (WatchRequest_ProgressRequest) is answered the
// way etcd answers it: one response with WatchId -1 (invalidWatchID,
// which the client broadcasts to every watch of the stream) whose header
// revision R promises that every event up to R of every watch on the stream
// has been sent, and R is at least every event revision already sent (a
// progress notification never goes back in time).
//
// etcd answers at once, and only when all watchers are synced (else it
// drops the request). Here every store watcher is asked (RequestProgress)
// and the answer is sent when each has delivered up to the branch revision
// read when the request arrived; no request is dropped.
//
// Revisions are per branch, so one R is only meaningful when all watches of
// the stream are on one branch (always so in single-branch mode, and for a
// kube-apiserver in prefix mode). A stream watching several branches gets a
// per-watch progress notification instead (WatchId = the watch, header = its
// own branch revision), which clientv3 delivers the same way to each watch.
// The same happens if other watches keep sending newer events than a quiet
// watch has confirmed for more than maxProgressRounds rounds.
const maxProgressRounds = 3

// progressRequest is a pending client progress request: the revision each
// watch must have delivered.
type progressRequest struct {
	targets map[*watch]int64
	rounds  int
}

func (st *watchStream) requestProgress() {
	if len(st.watches) == 0 {
		return // etcd sends nothing for a stream without watches
	}
	pr := &progressRequest{targets: map[*watch]int64{}}
	for _, wt := range st.watches {
		pr.ask(wt, wt.ks.Revision())
	}
	st.progress = append(st.progress, pr)
}

func (pr *progressRequest) ask(wt *watch, rev int64) {
	pr.targets[wt] = rev
	if wt.delivered < rev {
		wt.w.RequestProgress()
	}
}

// answerProgress answers the pending progress requests that are ready, in
// order.
func (st *watchStream) answerProgress() error {
	for len(st.progress) > 0 {
		pr := st.progress[0]
		if !st.reached(pr) {
			return nil
		}
		st.progress = st.progress[1:]
		if err := st.answer(pr); err != nil {
			return err
		}
	}
	return nil
}

// reached reports whether every live watch of the request delivered its target.
func (st *watchStream) reached(pr *progressRequest) bool {
	for wt, rev := range pr.targets {
		if st.watches[wt.id] != wt {
			delete(pr.targets, wt)
			continue
		}
		if wt.delivered < rev {
			return false
		}
	}
	return true
}

// answer sends the response to a request whose targets are reached, or asks
// lagging watches again and puts the request back in front.
func (st *watchStream) answer(pr *progressRequest) error {
	if len(st.watches) == 0 {
		return nil
	}
	oneBranch, branch := true, ""
	minDelivered, floor := int64(-1), st.lastBroadcast
	for _, wt := range st.watches {
		if branch == "" {
			branch = wt.branch
		}
		oneBranch = oneBranch && wt.branch == branch
		if minDelivered < 0 || wt.delivered < minDelivered {
			minDelivered = wt.delivered
		}
		floor = max(floor, wt.sent)
	}
	if oneBranch && minDelivered >= floor {
		st.lastBroadcast = minDelivered
		return st.send(&pb.WatchResponse{Header: st.s.hdr.at(minDelivered), WatchId: invalidWatchID})
	}
	if oneBranch && pr.rounds < maxProgressRounds {
		pr.rounds++
		for _, wt := range st.watches {
			if wt.delivered < floor {
				pr.ask(wt, floor)
			}
		}
		st.progress = append([]*progressRequest{pr}, st.progress...)
		return nil
	}
	for _, wt := range st.watches {
		if err := st.send(&pb.WatchResponse{Header: st.s.hdr.at(wt.delivered), WatchId: wt.id}); err != nil {
			return err
		}
	}
	return nil
}
