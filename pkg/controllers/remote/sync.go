package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/heaven-dev/heaven/pkg/deputy"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/gitstore/gitremote"
)

// Git is what the controller needs of the git store and of remotes;
// function fields so tests can use closures.
type Git struct {
	// Commits reads any commit (merge bases, changed keys, values).
	Commits gitstore.CommitReader
	// IsAncestor says whether commit a is b or one of b's ancestors.
	IsAncestor func(a, b plumbing.Hash) (bool, error)
	// Head returns the head commit of heaven name's branch, zero when it
	// has none, without starting the heaven.
	Head func(name string) (plumbing.Hash, error)
	// Create creates heaven name's branch at commit at; it fails if the
	// branch exists.
	Create func(name string, at plumbing.Hash) error
	// Open opens heaven name's branch to merge into, without starting the
	// heaven's API server.
	Open func(ctx context.Context, name string) (gitstore.MergeTarget, error)
	// Fetch fetches branch of the remote at url into ref tracking and
	// returns its commit, zero when the remote has no such branch; the
	// local branch tells the remote what we have.
	Fetch func(ctx context.Context, url, branch string, tracking, local plumbing.ReferenceName) (plumbing.Hash, error)
	// Push sets branch of the remote at url to head if it is at old;
	// gitremote.ErrRejected if it is not.
	Push func(ctx context.Context, url, branch string, head, old plumbing.Hash) error
	// ValidURL checks a remote's URL; nil accepts any.
	ValidURL func(url string) error
	// Ephemeral says whether a resource ("<group or core>/<resource>") is
	// stored outside git; those never merge.
	Ephemeral func(resource string) bool
	// Authorize, if set, asks a heaven's authorizer whether the user a
	// remote acts for may still do what it does (pkg/deputy).
	Authorize deputy.Authorizer
}

// round is what one exchange with the remote did.
type round struct {
	// Remote is the remote branch's commit as fetched (zero: no branch).
	Remote    plumbing.Hash
	FetchedAt time.Time
	// Local is the heaven's head at the end.
	Local plumbing.Hash
	// Cloned: the heaven had no commits and now starts at Remote.
	Cloned bool
	// Merge is the merge of Remote into the heaven, if one was computed.
	Merge *gitstore.MergeOutcome
	// Joined is a merge commit without changes that made Remote an
	// ancestor of the heaven's head, so that it could be pushed.
	Joined plumbing.Hash
	// Pushed is the commit pushed (zero: nothing was).
	Pushed plumbing.Hash
	// Idle: the heads were those of the last round, which had nothing to
	// do; nothing was computed.
	Idle bool
	// InSync: the remote branch holds what the heaven holds.
	InSync bool
}

// Failures of a round, told apart for status and backoff.
var (
	errFetch = errors.New("fetch failed")
	errPush  = errors.New("push failed")
)

// maxRounds bounds the rounds of one exchange that start again because
// the remote or the heaven moved meanwhile.
const maxRounds = 5

// exchange fetches the remote branch, merges it into the heaven and pushes
// the heaven back, starting again when someone pushed to the remote or
// wrote to the heaven meanwhile. idle are the heads (local, remote) of the
// last exchange that found nothing to do.
func exchange(ctx context.Context, g Git, p *plan, idle [2]plumbing.Hash) (*round, error) {
	var err error
	for range maxRounds {
		var r *round
		r, err = exchangeOnce(ctx, g, p, idle)
		if !errors.Is(err, gitremote.ErrRejected) && !errors.Is(err, gitstore.ErrHeadMoved) {
			return r, err
		}
	}
	return nil, err
}

func exchangeOnce(ctx context.Context, g Git, p *plan, idle [2]plumbing.Hash) (*round, error) {
	r := &round{}
	var err error
	r.Remote, err = g.Fetch(ctx, p.url, p.branch, p.tracking(), plumbing.NewBranchReferenceName(p.heaven))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errFetch, err)
	}
	r.FetchedAt = time.Now()
	if r.Local, err = g.Head(p.heaven); err != nil {
		return nil, err
	}
	switch {
	case r.Local.IsZero() && r.Remote.IsZero():
		return r, nil // nothing on either side yet
	case r.Local.IsZero():
		// A clone: the heaven starts where the remote is.
		if err := g.Create(p.heaven, r.Remote); err != nil {
			return nil, fmt.Errorf("%w: %w", gitstore.ErrHeadMoved, err) // written meanwhile: merge instead
		}
		r.Local, r.Cloned, r.InSync = r.Remote, true, true
		return r, nil
	case [2]plumbing.Hash{r.Local, r.Remote} == idle:
		r.Idle, r.InSync = true, true
		return r, nil
	}
	remoteIsAncestor := r.Remote.IsZero()
	if !remoteIsAncestor {
		if remoteIsAncestor, err = g.IsAncestor(r.Remote, r.Local); err != nil {
			return nil, err
		}
	}
	if !remoteIsAncestor {
		if remoteIsAncestor, err = mergeRemote(ctx, g, p, r); err != nil || r.Merge.Blocked {
			return r, err
		}
	}
	differs, err := contentDiffers(g, p, r.Remote, r.Local)
	if err != nil {
		return nil, err
	}
	r.InSync = !differs
	if p.push && remoteIsAncestor && r.Local != r.Remote && (differs || r.Remote.IsZero()) {
		if err := g.Push(ctx, p.url, p.branch, r.Local, r.Remote); err != nil {
			if errors.Is(err, gitremote.ErrRejected) {
				return nil, err // someone pushed first: fetch and merge again
			}
			return nil, fmt.Errorf("%w: %w", errPush, err)
		}
		r.Pushed, r.InSync = r.Local, true
	}
	return r, nil
}

// mergeRemote merges r.Remote into the heaven. A merge that changes nothing
// is still written as a merge commit (joined) when the heaven holds
// changes the remote lacks and is to push them: the remote takes only a
// head that descends from its own. A heaven that holds exactly what the
// remote holds pushes nothing, so joining histories it does not need
// (which would only send the other side round again) is left out. It
// says whether the remote's commit is now an ancestor of r.Local.
func mergeRemote(ctx context.Context, g Git, p *plan, r *round) (bool, error) {
	target, err := g.Open(ctx, p.heaven)
	if err != nil {
		return false, fmt.Errorf("opening heaven %s: %w", p.heaven, err)
	}
	subject := fmt.Sprintf("merge %s of %s (%s) into %s", p.branch, p.url, short(r.Remote), p.heaven)
	out, err := gitstore.MergeCommit(ctx, g.Commits, target, r.Remote, gitstore.MergeCommitOptions{
		Merger: p.merger, Include: p.include, Message: subject,
	})
	if err != nil {
		return false, err
	}
	r.Merge = &out
	switch {
	case out.Blocked:
		return false, nil
	case !out.Written.Commit.IsZero():
		r.Local = out.Written.Commit
		return true, nil
	case out.UpToDate:
		r.Local = out.TargetHead // the heaven moved on and took the remote meanwhile
		return true, nil
	}
	r.Local = out.TargetHead
	differs, err := contentDiffers(g, p, r.Remote, r.Local)
	if err != nil || !differs || !p.push {
		return false, err
	}
	res, err := target.Merge(ctx, gitstore.MergeRequest{ExpectedHead: out.TargetHead, SecondParent: r.Remote, Join: true, Message: subject})
	if err != nil {
		return false, err
	}
	r.Local, r.Joined = res.Commit, res.Commit
	return true, nil
}

// contentDiffers says whether commits a and b (zero: empty) hold different
// values of any key that merges.
func contentDiffers(g Git, p *plan, a, b plumbing.Hash) (bool, error) {
	if a == b {
		return false, nil
	}
	if b.IsZero() {
		a, b = b, a
	}
	keys, err := g.Commits.ChangedKeys(a, b)
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if p.includesKey(k) {
			return true, nil
		}
	}
	return false, nil
}

func short(h plumbing.Hash) string { return h.String()[:12] }
