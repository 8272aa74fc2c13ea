package automatedmerge

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

const w1 = "/example.com/widgets/default/w1"

func widget(size int, ready string) string {
	status := ""
	if ready != "" {
		status = fmt.Sprintf(`,"status":{"ready":%s}`, ready)
	}
	return fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"},"spec":{"size":%d}%s}`+"\n", size, status)
}

// pair is heaven "main" with a widget and its fork "ctrl".
func pair(t *testing.T) (*gitstore.Repository, *gitstore.Branch, *gitstore.Branch) {
	t.Helper()
	repo, err := gitstore.Open(filepath.Join(t.TempDir(), "heavens.git"), gitstore.Options{PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	ctx := context.Background()
	main, err := repo.Branch(ctx, "main")
	require.NoError(t, err)
	put(t, main, w1, widget(1, ""))
	put(t, main, "/core/configmaps/default/cm", `{"data":{"a":"1"}}`+"\n")
	_, _, err = repo.Fork(ctx, "ctrl", "main", 0)
	require.NoError(t, err)
	ctrl, err := repo.Branch(ctx, "ctrl")
	require.NoError(t, err)
	return repo, main, ctrl
}

func put(t *testing.T, b *gitstore.Branch, key, value string) {
	t.Helper()
	_, err := b.Put(context.Background(), key, []byte(value))
	require.NoError(t, err)
}

func value(t *testing.T, b *gitstore.Branch, key string) string {
	t.Helper()
	resp, err := b.Range(context.Background(), &gitstore.RangeRequest{Key: key})
	require.NoError(t, err)
	if len(resp.KVs) == 0 {
		return ""
	}
	return string(resp.KVs[0].Value)
}

func mergeInto(t *testing.T, repo *gitstore.Repository, target, source *gitstore.Branch, policy merge.Policy) gitstore.MergeOutcome {
	t.Helper()
	out, err := gitstore.MergeCommit(context.Background(), repo, target, source.Head(), gitstore.MergeCommitOptions{Merger: merge.Merger{Policy: policy}, Message: "merge " + source.Name()})
	require.NoError(t, err)
	return out
}
