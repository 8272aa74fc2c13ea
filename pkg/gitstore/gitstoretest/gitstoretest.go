// Package gitstoretest has the helpers of tests that merge branches of a
// gitstore.Repository: a heaven and its fork, a widget custom resource,
// writes and reads that fail the test on error.
package gitstoretest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// W1 is the key of the widget Pair starts with.
const W1 = "/example.com/widgets/default/w1"

// Widget is widget w1 of spec.size size, with status.ready if ready is not
// empty ("true", "false").
func Widget(size int, ready string) string {
	status := ""
	if ready != "" {
		status = fmt.Sprintf(`,"status":{"ready":%s}`, ready)
	}
	return fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"},"spec":{"size":%d}%s}`+"\n", size, status)
}

// Pair is heaven "main" with a widget and a configmap, and its fork "ctrl",
// in a new repository closed with the test.
func Pair(t *testing.T) (*gitstore.Repository, *gitstore.Branch, *gitstore.Branch) {
	t.Helper()
	repo, err := gitstore.Open(filepath.Join(t.TempDir(), "heavens.git"), gitstore.Options{PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := context.Background()
	main, err := repo.Branch(ctx, "main")
	require.NoError(t, err)
	Put(t, main, W1, Widget(1, ""))
	Put(t, main, "/core/configmaps/default/cm", `{"data":{"a":"1"}}`+"\n")
	_, _, err = repo.Fork(ctx, "ctrl", "main", 0)
	require.NoError(t, err)
	ctrl, err := repo.Branch(ctx, "ctrl")
	require.NoError(t, err)
	return repo, main, ctrl
}

// Put writes key.
func Put(t *testing.T, b *gitstore.Branch, key, value string) {
	t.Helper()
	_, err := b.Put(context.Background(), key, []byte(value))
	require.NoError(t, err)
}

// Value reads key, "" if it is absent.
func Value(t *testing.T, b *gitstore.Branch, key string) string {
	t.Helper()
	resp, err := b.Range(context.Background(), &gitstore.RangeRequest{Key: key})
	require.NoError(t, err)
	if len(resp.KVs) == 0 {
		return ""
	}
	return string(resp.KVs[0].Value)
}

// MergeInto merges source's head into target with policy.
func MergeInto(t *testing.T, repo *gitstore.Repository, target, source *gitstore.Branch, policy merge.Policy) gitstore.MergeOutcome {
	t.Helper()
	out, err := gitstore.MergeCommit(context.Background(), repo, target, source.Head(), gitstore.MergeCommitOptions{Merger: merge.Merger{Policy: policy}, Message: "merge " + source.Name()})
	require.NoError(t, err)
	return out
}
