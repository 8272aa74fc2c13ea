package etcdv3

import (
	"context"
	"errors"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sendLoop is the only sender on the stream and owns its watches. It returns
// when the client goes away, the receive side fails, a send fails, or the
// server shuts down; every store watcher of the stream is closed then.
func (st *watchStream) sendLoop(ctx context.Context) error {
	ticker := time.NewTicker(progressInterval(st.s.cfg.ProgressNotifyInterval))
	defer ticker.Stop()
	defer func() {
		for _, wt := range st.watches {
			close(wt.done)
			wt.w.Close()
		}
	}()
	for {
		var err error
		select {
		case <-ctx.Done():
			return rpctypes.ErrGRPCWatchCanceled
		case <-st.s.stopc:
			return status.Error(codes.Unavailable, "heaven: server is shutting down")
		case err = <-st.recvErr:
			if errors.Is(err, context.Canceled) {
				return rpctypes.ErrGRPCWatchCanceled
			}
			return err
		case m := <-st.ctrl:
			err = st.control(ctx, m)
		case d := <-st.deliv:
			err = st.deliver(d)
		case <-ticker.C:
			st.tick()
		}
		if err == nil {
			err = st.answerProgress()
		}
		if err != nil {
			st.logger.V(4).Info("Watch stream ended", "err", err)
			return err
		}
	}
}

func (st *watchStream) send(r *pb.WatchResponse) error {
	return st.stream.Send(r)
}

func (st *watchStream) control(ctx context.Context, m any) error {
	switch m := m.(type) {
	case failed:
		return st.send(m.resp)
	case created:
		wt := m.wt
		if err := st.send(&pb.WatchResponse{Header: st.s.hdr.at(m.rev), WatchId: wt.id, Created: true}); err != nil {
			wt.w.Close()
			return err
		}
		st.watches[wt.id] = wt
		go st.forward(ctx, wt)
	case cancelReq:
		wt := st.watches[m.id]
		if wt == nil {
			return nil // etcd does not answer a cancel of an unknown watch
		}
		st.remove(wt)
		return st.send(&pb.WatchResponse{Header: st.s.hdr.at(wt.ks.Revision()), WatchId: wt.id, Canceled: true})
	case progressReq:
		st.requestProgress()
	}
	return nil
}

func (st *watchStream) remove(wt *watch) {
	delete(st.watches, wt.id)
	close(wt.done)
	wt.w.Close()
	st.release(wt.id)
}

// deliver sends one store response of a live watch.
func (st *watchStream) deliver(d delivery) error {
	wt, r := d.wt, d.resp
	if st.watches[wt.id] != wt {
		return nil // canceled meanwhile
	}
	switch {
	case d.closed:
		st.remove(wt)
		return st.send(&pb.WatchResponse{Header: st.s.hdr.at(wt.ks.Revision()), WatchId: wt.id, Canceled: true,
			CancelReason: "heaven: the store ended the watch"})
	case r.CompactRevision != 0:
		// etcd: Canceled with CompactRevision and no reason; the client
		// reports ErrCompacted.
		st.remove(wt)
		return st.send(&pb.WatchResponse{Header: st.s.hdr.at(max(r.Revision, wt.ks.Revision())), WatchId: wt.id,
			CompactRevision: r.CompactRevision, Canceled: true})
	case r.Canceled:
		st.remove(wt)
		return st.send(&pb.WatchResponse{Header: st.s.hdr.at(wt.ks.Revision()), WatchId: wt.id, Canceled: true,
			CancelReason: "heaven: " + r.CancelReason})
	case r.Progress:
		wt.delivered = max(wt.delivered, r.Revision)
		if !wt.notifyPending {
			return nil
		}
		wt.notifyPending = false
		return st.send(&pb.WatchResponse{Header: st.s.hdr.at(wt.delivered), WatchId: wt.id})
	case len(r.Events) == 0:
		return nil
	}
	last := r.Events[len(r.Events)-1].KV.ModRevision
	err := st.send(&pb.WatchResponse{
		Header:  st.s.hdr.at(max(r.Revision, last)),
		WatchId: wt.id,
		Events:  fromEvents(r.Events, st.s.rt.clientKeys(wt.branch)),
	})
	wt.sent = max(wt.sent, last)
	// The store's Revision: everything up to it has now been seen.
	wt.delivered = max(wt.delivered, last, r.Revision)
	wt.eventsSinceTick = true
	return err
}

// tick asks for the periodic progress notification of every progress_notify
// watch that sent no events since the last tick (etcd's rule).
func (st *watchStream) tick() {
	for _, wt := range st.watches {
		if !wt.progressNotify {
			continue
		}
		if !wt.eventsSinceTick {
			wt.notifyPending = true
			wt.w.RequestProgress()
		}
		wt.eventsSinceTick = false
	}
}
