package gitstore

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/lru"

	"github.com/go-git/go-git/v5/plumbing"
	"k8s.io/klog/v2"

	"github.com/heaven-dev/heaven/pkg/gitstore/gitrepo"
)

// Options configure a Repository.
type Options struct {
	// PollInterval is how often open branches look for commits made by
	// others (a git push, a merge). Default 250ms.
	PollInterval time.Duration
	// AuthorName and AuthorEmail sign the store's commits.
	AuthorName, AuthorEmail string
	// OnCommit, if set, is called after each durable group commit with
	// the branch, the number of write requests it carried and how long
	// making it durable took (for metrics; it must not block).
	OnCommit func(branch string, requests int, took time.Duration)
	// OnHead, if set, is called when an open branch's head moved, once its
	// new revision is visible: after the store's own commits (merges
	// included) and after picking up commits made by others. It runs on
	// the branch's writer and must not block.
	OnHead func(branch string, head plumbing.Hash)
	// ReadFile turns a value file that the store did not write itself (a
	// commit pushed by someone else, or any file a merge reads through
	// Values) into the value served for key, or says why the file cannot
	// be served: such a file is a problem of the branch (Branch.Problems)
	// and its key keeps its last good value. It must be a pure function of
	// its arguments: rebuilding a branch must come to the same values.
	// Default: DecodeValue, which refuses only JSON that does not parse.
	ReadFile func(key string, content []byte, ext string) ([]byte, error)
	// OnProblems, if set, is called with an open branch's problems
	// whenever they change. It runs on the branch's writer and must not
	// block.
	OnProblems func(branch string, problems []FileProblem)
}

func (o *Options) complete() {
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.AuthorName == "" {
		o.AuthorName = "heaven"
	}
	if o.AuthorEmail == "" {
		o.AuthorEmail = "heaven@localhost"
	}
	if o.ReadFile == nil {
		o.ReadFile = func(_ string, content []byte, ext string) ([]byte, error) { return DecodeValue(content, ext) }
	}
}

// Repository is one bare git repository holding many branch keyspaces. It
// wraps gitrepo.Repo, which knows only objects, packs and refs and makes
// them durable; Repository adds what a key-value store needs on top: open
// branches with their revisions and indexes, leases, commits from outside,
// forks and merges.
type Repository struct {
	git    *gitrepo.Repo
	opts   Options
	leases *lessor
	log    klog.Logger

	// read keeps the last files readFiles served (by blob, key and
	// extension): merges read the same files at their base, both heads and
	// again at the next merge, and each read decodes and checks the file.
	read *lru.Cache
	// headers keeps the time and parents of the commits ancestry walks
	// (merge bases) read.
	headers *lru.Cache

	mu       sync.Mutex
	branches map[string]*Branch
	closed   bool

	stop chan struct{}
	done chan struct{}
}

// How many entries Repository.read and Repository.headers keep: the
// objects and recent history a few merges of a busy heaven touch, a few MiB.
const (
	readFilesCached     = 2048
	commitHeadersCached = 8192
)

// Open opens the bare repository at dir, creating it when missing.
func Open(dir string, opts Options) (*Repository, error) {
	opts.complete()
	git, err := gitrepo.Open(dir)
	if err != nil {
		return nil, err
	}
	r := &Repository{git: git, opts: opts, leases: newLessor(), log: klog.Background().WithValues("repository", dir), read: lru.New(readFilesCached), headers: lru.New(commitHeadersCached),
		branches: map[string]*Branch{}, stop: make(chan struct{}), done: make(chan struct{})}
	go r.background()
	return r, nil
}

// Git is the underlying repository.
func (r *Repository) Git() *gitrepo.Repo { return r.git }

// background polls open branches for commits made by others, expires
// leases and consolidates packs.
func (r *Repository) background() {
	defer close(r.done)
	ctx := klog.NewContext(context.Background(), r.log)
	poll := time.NewTicker(r.opts.PollInterval)
	defer poll.Stop()
	leases := time.NewTicker(500 * time.Millisecond)
	defer leases.Stop()
	maintain := time.NewTicker(time.Second)
	defer maintain.Stop()
	heads := time.NewTicker(headStateInterval)
	defer heads.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-poll.C:
			r.poll()
		case <-heads.C:
			for _, b := range r.openBranches() {
				if err := b.recordHead(false); err != nil {
					r.log.Error(err, "Recording a branch's head failed", "branch", b.name)
				}
			}
		case <-leases.C:
			r.expireLeases(ctx)
		case <-maintain.C:
			if err := r.git.Maintain(); err != nil {
				r.log.Error(err, "Pack maintenance failed")
			}
		}
	}
}

// poll reads every open branch's ref (one small file each) and wakes the
// writers of those that moved. One poller per repository, rather than a
// ticker per branch, keeps idle branches free.
func (r *Repository) poll() {
	for _, b := range r.openBranches() {
		tip, err := r.git.Ref(b.ref)
		if err != nil || tip == b.Head() {
			continue
		}
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
}

// headStateInterval is how often open branches' heads are recorded
// (headstate.go).
const headStateInterval = 2 * time.Second

func (r *Repository) openBranches() []*Branch {
	r.mu.Lock()
	defer r.mu.Unlock()
	branches := make([]*Branch, 0, len(r.branches))
	for _, b := range r.branches {
		branches = append(branches, b)
	}
	return branches
}

var branchNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?(/[a-z0-9]([a-z0-9._-]*[a-z0-9])?)*$`)

// ValidateBranchName accepts names that are both valid heaven names and
// safe git branch names: lowercase letters, digits, '-', '_', '.', and '/'
// between segments; no "..", no ".lock" suffix, at most 200 characters.
func ValidateBranchName(name string) error {
	if len(name) == 0 || len(name) > 200 || !branchNameRE.MatchString(name) ||
		strings.Contains(name, "..") || strings.HasSuffix(name, ".lock") || strings.Contains(name, ".lock/") {
		return fmt.Errorf("%w: %q (want lowercase letters, digits, '-', '_', '.', '/' between segments, at most 200 characters)", ErrInvalidBranch, name)
	}
	return nil
}

// Branch opens (or returns the already open) keyspace of branch name. A
// branch that does not exist yet starts empty at revision 1 and is created
// by its first write.
func (r *Repository) Branch(ctx context.Context, name string) (*Branch, error) {
	if err := ValidateBranchName(name); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, ErrClosed
	}
	if b, ok := r.branches[name]; ok {
		return b, nil
	}
	b, err := openBranch(ctx, r, name)
	if err != nil {
		return nil, err
	}
	r.branches[name] = b
	return b, nil
}

// CloseBranch stops serving a branch: its watchers end, its memory is
// freed, its leased keys are forgotten. The git branch stays.
func (r *Repository) CloseBranch(name string) error {
	r.mu.Lock()
	b, ok := r.branches[name]
	delete(r.branches, name)
	r.mu.Unlock()
	if !ok {
		return nil
	}
	b.close()
	r.leases.forget(b)
	return b.recordHead(true)
}

// Flush makes every commit so far visible to git now: the store's
// commits reach git's files a few milliseconds after they are durable
// (gitrepo's held commits), and someone about to run git on the
// repository may not want to wait for that.
func (r *Repository) Flush() error { return r.git.Flush() }

// Close closes every branch and the repository.
func (r *Repository) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	branches := r.branches
	r.branches = nil
	r.mu.Unlock()
	var errs []error
	for _, b := range branches {
		b.close()
		if err := b.recordHead(true); err != nil {
			errs = append(errs, fmt.Errorf("recording the head of %s: %w", b.name, err))
		}
	}
	close(r.stop)
	<-r.done
	return errors.Join(append(errs, r.git.Close())...)
}
