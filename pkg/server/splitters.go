package server

import (
	"context"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/splitter"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
)

// splitters runs a Deployment splitter in every heaven that SyncTargets
// point at, for as long as one does: it watches the SyncTargets of root and
// starts, tells or stops each heaven's splitter. A heaven with a splitter
// keeps running, as its syncers keep it anyway.
type splitters struct {
	s *Server

	mu      sync.Mutex
	targets map[string][]string // heaven → its SyncTargets, sorted
	running map[string]*runningSplitter
}

type runningSplitter struct {
	ctrl   *splitter.Controller // nil until its heaven runs (guarded by splitters.mu)
	cancel context.CancelFunc
}

// startSplitters watches root's SyncTargets until ctx ends.
func (s *Server) startSplitters(ctx context.Context, cfg *rest.Config) {
	if !s.cfg.DeploymentSplitter {
		return
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "heaven-server/" + splitter.ControllerName
	sp := &splitters{s: s, targets: map[string][]string{}, running: map[string]*runningSplitter{}}
	factory := externalversions.NewSharedInformerFactory(versioned.NewForConfigOrDie(cfg), 0)
	targets := factory.Heaven().V1alpha1().SyncTargets()
	inf, lister := targets.Informer(), targets.Lister()
	changed := func(any) {
		all, _ := lister.List(labels.Everything()) // a cache's List never fails
		sp.sync(ctx, all)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, UpdateFunc: func(_, obj any) { changed(obj) }, DeleteFunc: changed,
	})
	factory.StartWithContext(ctx)
	<-ctx.Done()
	factory.Shutdown()
}

// sync makes the running splitters match the SyncTargets.
func (sp *splitters) sync(ctx context.Context, targets []*v1alpha1.SyncTarget) {
	byHeaven := map[string][]string{}
	for _, t := range targets {
		if t.DeletionTimestamp == nil && t.Spec.Heaven != "" {
			byHeaven[t.Spec.Heaven] = append(byHeaven[t.Spec.Heaven], t.Name)
		}
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for h, ts := range byHeaven {
		sort.Strings(ts)
		same := equalStrings(sp.targets[h], ts)
		sp.targets[h] = ts
		switch r, ok := sp.running[h]; {
		case !ok:
			sp.start(ctx, h)
		case !same && r.ctrl != nil:
			r.ctrl.TargetsChanged()
		}
	}
	for h, r := range sp.running {
		if _, ok := byHeaven[h]; !ok {
			r.cancel()
			delete(sp.running, h)
			delete(sp.targets, h)
		}
	}
}

// start runs heaven h's splitter, once the heaven runs. Caller holds sp.mu.
func (sp *splitters) start(ctx context.Context, h string) {
	ctx, cancel := context.WithCancel(ctx)
	r := &runningSplitter{cancel: cancel}
	sp.running[h] = r
	logger := klog.FromContext(ctx).WithValues("heaven", h)
	go func() {
		cfg, release, err := sp.s.heavenClient(ctx, h)
		if err != nil {
			logger.Info("No Deployment splitter for a heaven that cannot run", "err", err)
			return
		}
		defer release()
		cfg = rest.CopyConfig(cfg)
		cfg.UserAgent = "heaven-server/" + splitter.ControllerName
		ctrl := splitter.New(kubernetes.NewForConfigOrDie(cfg), func() []string {
			sp.mu.Lock()
			defer sp.mu.Unlock()
			return append([]string(nil), sp.targets[h]...)
		})
		sp.mu.Lock()
		r.ctrl = ctrl
		sp.mu.Unlock()
		ctrl.Run(klog.NewContext(ctx, logger), 2)
	}()
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
