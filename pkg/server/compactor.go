package server

import (
	"context"
	"time"

	"k8s.io/klog/v2"
)

// runCompactor compacts the history of every running heaven each interval,
// to the revision it had one interval before: what kube-apiserver asks of
// etcd. Git keeps every commit; compaction only ends reads and watches at
// older revisions (they get 410 Gone and relist, as with etcd).
func (s *Server) runCompactor(ctx context.Context) {
	if s.repo == nil || s.cfg.CompactionInterval == 0 {
		return
	}
	t := time.NewTicker(s.cfg.CompactionInterval)
	defer t.Stop()
	previous := map[string]int64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		next := map[string]int64{}
		for _, name := range s.heavens.active() {
			b, err := s.repo.Branch(ctx, name)
			if err != nil {
				continue
			}
			next[name] = b.Revision()
			if rev, ok := previous[name]; ok && rev > b.CompactRevision() {
				if err := b.Compact(ctx, rev); err != nil {
					klog.FromContext(ctx).V(2).Info("Compaction skipped", "heaven", name, "revision", rev, "err", err)
				}
			}
		}
		previous = next
	}
}
