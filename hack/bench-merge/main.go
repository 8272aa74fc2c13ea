// Command bench-merge times Heaven's merge of two heavens' branches against
// `git merge` of the same two branches.
//
// Setup (not timed): a branch "base" of N objects (configmap-like JSON as
// the API server writes it, stored by the git store itself: indented JSON,
// one field per line), forked twice. One side, "ours" (the target: a user
// editing), changes M objects: a label and one data key; the other,
// "theirs" (the source: a controller), changes M objects, half of them the
// same ones: another label and the next data key. Both sides' edits of an
// object touch neighbouring lines, so git's line merge conflicts on every
// object changed on both sides, where ours merges them field by field.
//
// Timed, in the same run, alternating which goes first:
//
//	merge      automatedmerge.MergeCommit into a fresh fork of "ours": merge
//	           base, changed keys, per-object JSON merge, and the merge commit
//	           written through the store (durable, as every write is)
//	git merge  `git merge` (merge-ort) of the same two commits in a
//	           temporary clone with "ours" checked out
//
// The last line is
//
//	RESULT merge_ms=<median> git_merge_ms=<median> ratio=<merge/git> conflicts=<ours> git_conflicts=<files>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/heaven-dev/heaven/pkg/gitstore"
	"github.com/heaven-dev/heaven/pkg/merge"
)

type config struct {
	objects    int
	changes    int
	namespaces int
	runs       int
	dir        string
	cpuProfile string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.objects, "objects", 10000, "objects in the base")
	flag.IntVar(&cfg.changes, "changes", 1000, "objects each side changes (half of them the same ones)")
	flag.IntVar(&cfg.namespaces, "namespaces", 20, "namespaces the objects are spread over")
	flag.IntVar(&cfg.runs, "runs", 5, "runs of each merge; medians are reported")
	flag.StringVar(&cfg.dir, "dir", "", "working directory (default: a temporary one, removed afterwards)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of our first merge to this file")
	flag.Parse()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-merge:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	if cfg.changes > cfg.objects || cfg.runs < 1 || cfg.namespaces < 1 {
		return errors.New("want -changes <= -objects, -runs >= 1, -namespaces >= 1")
	}
	dir := cfg.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "bench-merge-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	ctx := context.Background()
	repoDir := filepath.Join(dir, "heavens.git")
	repo, err := gitstore.Open(repoDir, gitstore.Options{})
	if err != nil {
		return err
	}
	defer repo.Close()

	start := time.Now()
	sides, err := setup(ctx, repo, cfg)
	if err != nil {
		return err
	}
	fmt.Printf("setup: %d objects, each side changes %d (%d on both), in %s\n",
		cfg.objects, cfg.changes, cfg.changes/2, time.Since(start).Round(time.Millisecond))

	work := filepath.Join(dir, "work")
	if err := gitSetup(repoDir, work, sides.ours); err != nil {
		return err
	}

	var prof *os.File
	if cfg.cpuProfile != "" {
		if prof, err = os.Create(cfg.cpuProfile); err != nil {
			return err
		}
		defer prof.Close()
	}
	var ours, theirs []time.Duration
	var conflicts, gitConflicts int
	for i := range cfg.runs {
		oursRun := func() error {
			d, n, err := ourMerge(ctx, repo, sides, i, prof)
			ours, conflicts = append(ours, d), n
			return err
		}
		gitRun := func() error {
			d, n, err := gitMerge(work, sides)
			theirs, gitConflicts = append(theirs, d), n
			return err
		}
		first, second := oursRun, gitRun
		if i%2 == 1 {
			first, second = gitRun, oursRun
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
		fmt.Printf("run %d: merge %s (%d conflicts), git merge %s (%d conflicted files)\n",
			i+1, ours[i].Round(time.Microsecond), conflicts, theirs[i].Round(time.Microsecond), gitConflicts)
	}
	if d, err := gitMergeTree(work, sides); err == nil {
		fmt.Printf("for reference: git merge-tree --write-tree (merge-ort without a work tree): %s\n", d.Round(time.Microsecond))
	}
	m, g := median(ours), median(theirs)
	fmt.Printf("RESULT merge_ms=%.1f git_merge_ms=%.1f ratio=%.2f conflicts=%d git_conflicts=%d\n",
		ms(m), ms(g), ms(m)/ms(g), conflicts, gitConflicts)
	return nil
}

// sides are the commits of the two branches and their fork point.
type sides struct {
	base, ours, theirs plumbing.Hash
	oursBranch         string
	both               string // a key both sides changed
}

// setup writes the base through the store, forks it and changes each side.
func setup(ctx context.Context, repo *gitstore.Repository, cfg config) (*sides, error) {
	base, err := repo.Branch(ctx, "base")
	if err != nil {
		return nil, err
	}
	var puts []kv
	for i := range cfg.objects {
		puts = append(puts, kv{key(cfg, i), object(cfg, i, nil)})
	}
	if err := write(ctx, base, puts); err != nil {
		return nil, err
	}
	s := &sides{base: base.Head(), oursBranch: "ours", both: key(cfg, cfg.changes*3/4)}
	// ours: objects [0, M) get label team and data key-3; theirs: objects
	// [M/2, 3M/2) get label tier and data key-4.
	change := func(name string, from int, e *edit) (plumbing.Hash, error) {
		if _, _, err := repo.Fork(ctx, name, "base", 0); err != nil {
			return plumbing.ZeroHash, err
		}
		b, err := repo.Branch(ctx, name)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		var puts []kv
		for i := from; i < from+cfg.changes; i++ {
			puts = append(puts, kv{key(cfg, i%cfg.objects), object(cfg, i%cfg.objects, e)})
		}
		if err := write(ctx, b, puts); err != nil {
			return plumbing.ZeroHash, err
		}
		return b.Head(), nil
	}
	if s.ours, err = change("ours", 0, &edit{label: "team", value: "platform", dataKey: 3}); err != nil {
		return nil, err
	}
	if s.theirs, err = change("theirs", cfg.changes/2, &edit{label: "tier", value: "backend", dataKey: 4}); err != nil {
		return nil, err
	}
	for _, b := range []string{"base", "ours", "theirs"} {
		if err := repo.CloseBranch(b); err != nil {
			return nil, err
		}
	}
	return s, nil
}

type kv struct {
	key   string
	value []byte
}

// write puts kvs through the store, in transactions of txnOps.
func write(ctx context.Context, b *gitstore.Branch, kvs []kv) error {
	const txnOps = 1000
	for len(kvs) > 0 {
		n := min(txnOps, len(kvs))
		txn := &gitstore.Txn{}
		for _, p := range kvs[:n] {
			txn.Then = append(txn.Then, gitstore.Op{Put: &gitstore.PutOp{Key: p.key, Value: p.value}})
		}
		if _, err := b.Txn(ctx, txn); err != nil {
			return err
		}
		kvs = kvs[n:]
	}
	return nil
}

func key(cfg config, i int) string {
	return fmt.Sprintf("/core/configmaps/ns-%02d/cm-%05d", i%cfg.namespaces, i)
}

// edit is one side's change of an object.
type edit struct {
	label, value string
	dataKey      int
}

// object is configmap i as the API server stores it (compact JSON and a
// newline; the store indents it into its file), changed by e.
func object(cfg config, i int, e *edit) []byte {
	labels := fmt.Sprintf(`"app":"app-%d"`, i%50)
	if e != nil {
		labels += fmt.Sprintf(`,%q:%q`, e.label, e.value)
	}
	var data []string
	for k := range 10 {
		v := fmt.Sprintf("value-%d-%d", i, k)
		if e != nil && k == e.dataKey {
			v = fmt.Sprintf("%s-changed-%d", e.label, i)
		}
		data = append(data, fmt.Sprintf(`"key-%d":%q`, k, v))
	}
	return fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%05d","namespace":"ns-%02d",`+
		`"uid":"00000000-0000-4000-8000-%012d","creationTimestamp":"2026-01-01T00:00:00Z","labels":{%s},`+
		`"managedFields":[{"manager":"kubectl-create","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:00Z",`+
		`"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{}}}}]},"data":{%s}}`+"\n",
		i, i%cfg.namespaces, i, labels, strings.Join(data, ","))
}

// ourMerge merges theirs into a fresh fork of ours (its index is loaded
// before the clock starts) and returns the time and the conflicts.
func ourMerge(ctx context.Context, repo *gitstore.Repository, s *sides, run int, prof *os.File) (time.Duration, int, error) {
	name := fmt.Sprintf("ours-run-%d", run)
	if _, _, err := repo.Fork(ctx, name, s.oursBranch, 0); err != nil {
		return 0, 0, err
	}
	target, err := repo.Branch(ctx, name)
	if err != nil {
		return 0, 0, err
	}
	defer repo.CloseBranch(name)
	if prof != nil && run == 0 {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return 0, 0, err
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	out, err := gitstore.MergeCommit(ctx, repo, target, s.theirs, gitstore.MergeCommitOptions{
		Merger:  merge.Merger{Policy: merge.Policy{Default: merge.PreferSource}},
		Message: "merge theirs into ours",
	})
	took := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	if out.Written.Commit.IsZero() {
		return 0, 0, errors.New("our merge wrote nothing")
	}
	if err := checkMerged(ctx, target, s.both); err != nil {
		return 0, 0, err
	}
	return took, len(out.Conflicts), nil
}

// checkMerged makes sure an object both sides changed has both changes.
func checkMerged(ctx context.Context, b *gitstore.Branch, key string) error {
	resp, err := b.Range(ctx, &gitstore.RangeRequest{Key: key})
	if err != nil {
		return err
	}
	if len(resp.KVs) != 1 {
		return fmt.Errorf("%s is missing after the merge", key)
	}
	v := string(resp.KVs[0].Value)
	for _, want := range []string{`"team":"platform"`, `"tier":"backend"`, `team-changed-`, `tier-changed-`} {
		if !strings.Contains(v, want) {
			return fmt.Errorf("%s after the merge lacks %s: %s", key, want, v)
		}
	}
	return nil
}

// gitSetup clones the repository with ours checked out (the store may move
// a ref file just after its commit returns, so commits are named by hash).
func gitSetup(repoDir, work string, ours plumbing.Hash) error {
	if _, err := git("", "clone", "-q", "--no-checkout", repoDir, work); err != nil {
		return err
	}
	_, err := git(work, "checkout", "-q", "-B", "ours", ours.String())
	return err
}

// gitMerge times `git merge` of theirs into ours, counts the conflicted
// files, and resets the clone to ours.
func gitMerge(work string, s *sides) (time.Duration, int, error) {
	if _, err := git(work, "reset", "-q", "--hard", s.ours.String()); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	out, err := git(work, "merge", "-q", "--no-edit", "-s", "ort", s.theirs.String())
	took := time.Since(start)
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return 0, 0, fmt.Errorf("git merge: %w: %s", err, out)
	}
	files, err := git(work, "diff", "--name-only", "--diff-filter=U")
	if err != nil {
		return 0, 0, err
	}
	conflicted := len(strings.Fields(files))
	if _, err := git(work, "reset", "-q", "--hard", s.ours.String()); err != nil {
		return 0, 0, err
	}
	return took, conflicted, nil
}

// gitMergeTree times merge-ort alone: `git merge-tree --write-tree`.
func gitMergeTree(work string, s *sides) (time.Duration, error) {
	start := time.Now()
	_, err := git(work, "merge-tree", "--write-tree", "--name-only", s.ours.String(), s.theirs.String())
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		return 0, err
	}
	return time.Since(start), nil
}

func git(dir string, args ...string) (string, error) {
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@localhost"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
