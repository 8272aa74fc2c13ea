// Package remote is the controller of heavens that track a branch of a git
// remote (Heaven spec.remote): it fetches the remote branch into the
// remote-tracking ref refs/remotes/<heaven>/<branch>, merges it into the
// heaven's branch with the merge of AutomatedMerges (a merge commit through
// the store, field by field), and pushes the heaven's branch back, at an
// interval and as soon as the heaven changes. An unreachable remote is
// retried with backoff; the heaven keeps working meanwhile, and everything
// written is exchanged once the remote is back.
//
// # Convergence
//
// Two heaven-servers that track one remote branch converge by content, not
// by commits: each server's branch keeps its own first-parent history (its
// revisions only grow), so histories never become identical. A heaven is
// pushed only when it holds something the remote lacks, and a merge that
// changes nothing is written (as a merge commit without changes, to make
// the push a fast-forward) only then. Once writes stop, one side's last
// push is merged by the other without leaving anything to push back, and
// both hold the same objects.
package remote

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
	"github.com/heaven-dev/heaven/pkg/generated/clientset/versioned"
	heavenclient "github.com/heaven-dev/heaven/pkg/generated/clientset/versioned/typed/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/generated/informers/externalversions"
	heavenlisters "github.com/heaven-dev/heaven/pkg/generated/listers/heaven/v1alpha1"
)

// ControllerName is the controller's name in events and logs.
const ControllerName = "remote-controller"

// Backoff of an exchange that failed (an unreachable remote): from
// minBackoff, doubling, up to maxBackoff.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = time.Minute
)

// Controller keeps heavens and their git remotes in sync.
type Controller struct {
	client   heavenclient.HeavenInterface
	factory  externalversions.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   heavenlisters.HeavenLister
	loop     *reconcileloop.Loop
	git      Git
	events   record.EventBroadcaster
	recorder record.EventRecorder

	mu     sync.Mutex
	states map[string]*heavenState
}

// heavenState is what the controller remembers of a heaven between
// exchanges.
type heavenState struct {
	generation int64
	// idle are the heads (local, remote) of the last exchange that had
	// nothing to do: the same heads need no merge computed again.
	idle [2]plumbing.Hash
	// head is the heaven's head after the last exchange: the controller's
	// own merge moving the branch needs no exchange.
	head plumbing.Hash
	// failing: the last exchange failed and a retry is scheduled with
	// backoff; changes of the heaven wait for it.
	failing bool
	// reported is the status.remote and condition last written (the
	// informer's copy may not have them yet).
	reported     *v1alpha1.RemoteStatus
	reportedCond *metav1.Condition
}

// New builds the controller over the root heaven's clients.
func New(client versioned.Interface, kube kubernetes.Interface, git Git) *Controller {
	factory := externalversions.NewSharedInformerFactory(client, 0)
	heavens := factory.Heaven().V1alpha1().Heavens()
	c := &Controller{
		client:   client.HeavenV1alpha1().Heavens(),
		factory:  factory,
		informer: heavens.Informer(),
		lister:   heavens.Lister(),
		git:      git,
		states:   map[string]*heavenState{},
	}
	c.events, c.recorder = reconcileloop.BurstyEvents(kube, ControllerName)
	c.loop = reconcileloop.New(reconcileloop.Options{Name: "remote", KeyName: "heaven",
		RateLimiter: reconcileloop.Backoff(minBackoff, maxBackoff)}, c.reconcile)
	enqueue := c.loop.Enqueue
	_, _ = c.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue,
		// A new spec calls for an exchange now; status updates (the
		// controller's own among them) do not.
		UpdateFunc: func(old, obj any) {
			o, n := old.(*v1alpha1.Heaven), obj.(*v1alpha1.Heaven)
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
// Options.OnHead): a heaven that pushes to a remote exchanges now, unless
// the move is the controller's own merge or the remote is failing (the
// retry with backoff takes the change along). It never blocks.
func (c *Controller) BranchMoved(branch string, head plumbing.Hash) {
	h, err := c.lister.Get(branch)
	if err != nil {
		return
	}
	if r := h.Spec.Remote; r == nil || (r.Push != nil && !*r.Push) {
		return
	}
	c.mu.Lock()
	st := c.states[branch]
	skip := st != nil && (st.failing || st.head == head)
	c.mu.Unlock()
	if !skip {
		c.loop.Add(branch)
	}
}

// state returns what is remembered of heaven name at generation (reset
// when the spec changed).
func (c *Controller) state(name string, generation int64) heavenState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.states[name]
	if st == nil || st.generation != generation {
		st = &heavenState{generation: generation}
		c.states[name] = st
	}
	return *st
}

func (c *Controller) setState(name string, st heavenState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states[name] = &st
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.states, name)
}
