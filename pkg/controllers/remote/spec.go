package remote

import (
	"errors"
	"fmt"
	"time"

	builtin "github.com/heaven-dev/heaven/pkg/builtin"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// Defaults and bounds of spec.remote.
const (
	DefaultInterval = 10 * time.Second
	minInterval     = time.Second
)

// plan is a heaven's validated spec.remote with its defaults.
type plan struct {
	heaven   string
	url      string
	branch   string
	interval time.Duration
	push     bool
	merger   merge.Merger
	include  func(resource string) bool
}

// tracking is the remote-tracking ref the remote branch is fetched into.
func (p *plan) tracking() plumbing.ReferenceName {
	return TrackingRef(p.heaven, p.branch)
}

// TrackingRef is the ref that heaven's remote branch is fetched into,
// refs/remotes/<heaven>/<branch>: one remote per heaven.
func TrackingRef(heaven, branch string) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(heaven, branch)
}

// compile validates heaven name's spec.remote and fills in its defaults;
// validURL checks the URL (nil: any), ephemeral says which resources are
// never in git. Every problem is reported at once.
func compile(name string, spec *v1alpha1.Remote, validURL func(string) error, ephemeral func(string) bool) (*plan, error) {
	p := &plan{heaven: name, url: spec.URL, branch: spec.Branch, interval: DefaultInterval, push: true}
	var errs []error
	if spec.URL == "" {
		errs = append(errs, errors.New("url: must be set"))
	} else if validURL != nil {
		if err := validURL(spec.URL); err != nil {
			errs = append(errs, fmt.Errorf("url: %w", err))
		}
	}
	if p.branch == "" {
		p.branch = name
	}
	if err := plumbing.NewBranchReferenceName(p.branch).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("branch %q: %w", p.branch, err))
	}
	if spec.Interval != nil {
		if p.interval = spec.Interval.Duration; p.interval < minInterval {
			errs = append(errs, fmt.Errorf("interval %s: at least %s", p.interval, minInterval))
		}
	}
	if spec.Push != nil {
		p.push = *spec.Push
	}
	policy := merge.Policy{Default: merge.PreferSource}
	if cp := spec.ConflictPolicy; cp != nil {
		if cp.Default != "" {
			policy.Default = merge.Resolution(cp.Default)
		}
		for _, r := range cp.Rules {
			policy.Rules = append(policy.Rules, merge.PathRule{Resource: r.Resource, Path: r.Path, Resolution: merge.Resolution(r.Resolution)})
		}
	}
	if err := policy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("conflictPolicy: %w", err))
	}
	p.merger = merge.Merger{Policy: policy, Lists: builtin.ListRules()}
	p.include = func(resource string) bool {
		return resource != "" && (ephemeral == nil || !ephemeral(resource))
	}
	return p, errors.Join(errs...)
}

// includesKey says whether a store key merges.
func (p *plan) includesKey(key string) bool { return p.include(gitstore.ResourceOf(key)) }
