// Package automatedmerge is the controller of AutomatedMerge objects in the
// root heaven: it merges the branches of source heavens into a target
// heaven's branch (MergeCommit), on every change of a source and at an
// interval, and reports each merge and each conflict in status and as
// Events.
//
// Heavens are merged through their git branches: a heaven whose API server
// is stopped (idle) is merged into all the same, and its watchers see the
// merge as ordinary events once it runs.
package automatedmerge

import (
	"context"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/controllers/internal/reconcileloop"
	"github.com/heaven-dev/heaven/pkg/deputy"
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	heavenclient "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/typed/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
)

// ControllerName is the controller's name in events and logs.
const ControllerName = "automatedmerge-controller"

// Branches is what the controller needs of the git store and of
// heaven-server; function fields so tests can use closures.
type Branches struct {
	// Commits reads any commit (merge bases, changed keys, values).
	Commits gitstore.CommitReader
	// Head returns the head commit of heaven name's branch, zero when it
	// has none, without starting the heaven.
	Head func(ctx context.Context, name string) (plumbing.Hash, error)
	// Open opens heaven name's branch to merge into, without starting the
	// heaven's API server.
	Open func(ctx context.Context, name string) (gitstore.MergeTarget, error)
	// Ephemeral says whether a resource ("<group or core>/<resource>") is
	// stored outside git; those never merge.
	Ephemeral func(resource string) bool
	// Authorize, if set, asks a heaven's authorizer whether the user a
	// merge acts for may do what it does there (pkg/deputy).
	Authorize deputy.Authorizer
}

// Controller reconciles AutomatedMerge objects.
type Controller struct {
	client   heavenclient.AutomatedMergeInterface
	factory  externalversions.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   heavenlisters.AutomatedMergeLister
	loop     *reconcileloop.Loop
	branches Branches
	events   record.EventBroadcaster
	recorder record.EventRecorder

	// attempts remembers, per AutomatedMerge and source, the heads of the
	// last merge attempt that wrote nothing (up to date, no change, or
	// blocked), so that the same attempt is not made, and reported, again.
	mu       sync.Mutex
	attempts map[attemptKey]attempt
	// merged remembers, per AutomatedMerge and source, the last merge
	// written: a reconcile that starts from a cached object older than the
	// status reporting it (the informer lags behind our own update) still
	// reports it, rather than writing the older status back over it.
	merged map[attemptKey]mergedRecord
}

// mergedRecord is what status says of a merge written.
type mergedRecord struct {
	sourceCommit, targetCommit string
	revision                   int64
	time                       metav1.Time
	objectsChanged             int32
}

type attemptKey struct{ merge, source string }

type attempt struct {
	generation     int64
	source, target plumbing.Hash
}

// Indexes of the informer: AutomatedMerges by source and by target heaven.
const (
	bySource = "source"
	byTarget = "target"
)

// New builds the controller over the root heaven's clients.
func New(client versioned.Interface, kube kubernetes.Interface, branches Branches) *Controller {
	factory := externalversions.NewSharedInformerFactory(client, 0)
	merges := factory.Heaven().V1alpha1().AutomatedMerges()
	c := &Controller{
		client:   client.HeavenV1alpha1().AutomatedMerges(),
		factory:  factory,
		informer: merges.Informer(),
		lister:   merges.Lister(),
		branches: branches,
		attempts: map[attemptKey]attempt{},
		merged:   map[attemptKey]mergedRecord{},
	}
	c.events, c.recorder = reconcileloop.BurstyEvents(kube, ControllerName)
	c.loop = reconcileloop.New(reconcileloop.Options{
		Name: "automatedmerge", KeyName: "automatedMerge",
		// A target that keeps moving under a merge, or a store error: retry
		// soon, and at least every 10s.
		RateLimiter: reconcileloop.Backoff(10*time.Millisecond, 10*time.Second),
	}, c.reconcile)
	_ = c.informer.AddIndexers(cache.Indexers{
		bySource: func(obj any) ([]string, error) {
			if am, ok := obj.(*v1alpha1.AutomatedMerge); ok {
				return am.Spec.Sources, nil
			}
			return nil, nil
		},
		byTarget: func(obj any) ([]string, error) {
			if am, ok := obj.(*v1alpha1.AutomatedMerge); ok {
				return []string{am.Spec.Target}, nil
			}
			return nil, nil
		},
	})
	enqueue := c.loop.Enqueue
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		// Only a new spec (or a deletion) calls for a merge now: the
		// controller's own status updates do not, or an interval trigger
		// would fire on every merge.
		UpdateFunc: func(old, obj any) {
			o, n := old.(*v1alpha1.AutomatedMerge), obj.(*v1alpha1.AutomatedMerge)
			if o.Generation != n.Generation || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
				enqueue(obj)
			}
		},
		DeleteFunc: enqueue,
	})
	return c
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.events.Shutdown()
	c.factory.StartWithContext(ctx)
	defer c.factory.Shutdown()
	c.loop.Run(ctx, workers, c.informer.HasSynced)
}

// BranchMoved is told that heaven branch's head moved (gitstore's
// Options.OnHead): AutomatedMerges that merge from it run now. Those that
// merge into it run too while they are blocked by a conflict, which a write
// to the target may have resolved. It never blocks.
func (c *Controller) BranchMoved(branch string) {
	idx := c.informer.GetIndexer()
	if objs, err := idx.ByIndex(bySource, branch); err == nil {
		for _, obj := range objs {
			am := obj.(*v1alpha1.AutomatedMerge)
			if onChange := am.Spec.Trigger.OnChange; onChange == nil || *onChange {
				c.loop.Add(am.Name)
			}
		}
	}
	if objs, err := idx.ByIndex(byTarget, branch); err == nil {
		for _, obj := range objs {
			if am := obj.(*v1alpha1.AutomatedMerge); isBlocked(am) {
				c.loop.Add(am.Name)
			}
		}
	}
}

func isBlocked(am *v1alpha1.AutomatedMerge) bool {
	for _, s := range am.Status.Sources {
		if s.Blocked {
			return true
		}
	}
	return false
}

// remembered says whether the last attempt for (merge, source) was made at
// the same heads and generation, and wrote nothing.
func (c *Controller) remembered(k attemptKey, a attempt) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts[k] == a
}

func (c *Controller) remember(k attemptKey, a *attempt) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a == nil {
		delete(c.attempts, k)
	} else {
		c.attempts[k] = *a
	}
}

// forget drops what is remembered of a merge that is gone.
func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.attempts {
		if k.merge == name {
			delete(c.attempts, k)
		}
	}
	for k := range c.merged {
		if k.merge == name {
			delete(c.merged, k)
		}
	}
}

// rememberMerged records a merge written for k.
func (c *Controller) rememberMerged(k attemptKey, st *v1alpha1.SourceMergeStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merged[k] = mergedRecord{st.SourceCommit, st.TargetCommit, st.Revision, *st.LastMergeTime, st.ObjectsChanged}
}

// reportMerged puts the last merge written for k into st when st, read
// from the cache, predates it.
func (c *Controller) reportMerged(k attemptKey, st *v1alpha1.SourceMergeStatus) {
	c.mu.Lock()
	r, ok := c.merged[k]
	c.mu.Unlock()
	if !ok || st.Revision >= r.revision {
		return
	}
	st.SourceCommit, st.TargetCommit, st.Revision, st.ObjectsChanged = r.sourceCommit, r.targetCommit, r.revision, r.objectsChanged
	st.LastMergeTime = r.time.DeepCopy()
}
