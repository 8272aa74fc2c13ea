package remote

import (
	"context"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

// cloneTimeout bounds the fetch of a clone: a heaven whose remote does not
// answer starts empty instead, and merges the remote later.
const cloneTimeout = 30 * time.Second

// Clone creates heaven name's branch at the commit of its remote branch,
// as git clone does, and says whether it did: not when the remote has no
// such branch (the heaven starts empty and pushes it). The Heaven
// controller calls it for a new heaven with spec.remote before starting
// it, so that two servers tracking one branch share its history from the
// start instead of merging two unrelated ones.
func Clone(ctx context.Context, g Git, name string, spec *v1alpha1.Remote) (bool, error) {
	p, err := compile(name, spec, g.ValidURL, g.Ephemeral)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithTimeout(ctx, cloneTimeout)
	defer cancel()
	at, err := g.Fetch(ctx, p.url, p.branch, p.tracking(), plumbing.NewBranchReferenceName(name))
	if err != nil || at.IsZero() {
		return false, err
	}
	return true, g.Create(name, at)
}
