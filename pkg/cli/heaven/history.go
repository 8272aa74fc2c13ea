package heaven

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	historyv1alpha1 "github.com/heaven-dev/heaven/pkg/apis/history/v1alpha1"
	"github.com/heaven-dev/heaven/pkg/merge"
)

// The history commands read and undo through each heaven's
// history.heaven.dev API: what a user may do is what that heaven's RBAC
// grants (view: log and diff; edit and admin: revert and restore).

func (o *options) history(heaven, resource string) (dynamic.ResourceInterface, error) {
	if heaven == "" {
		loc, err := o.location()
		if err != nil {
			return nil, err
		}
		heaven = loc.heaven
	}
	cfg, err := o.heavenConfig(heaven)
	if err != nil {
		return nil, err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return client.Resource(historyv1alpha1.SchemeGroupVersion.WithResource(resource)), nil
}

func (o *options) logCommand() *cobra.Command {
	var limit int64
	cmd := &cobra.Command{
		Use:   "log [HEAVEN] [-- PATH...]",
		Short: "Show a heaven's commits (default: the current context's), newest first: revision, author, age, message; after --, only those that changed objects under the paths (core/configmaps/default/web, apps/deployments/)",
		RunE: func(cmd *cobra.Command, args []string) error {
			heaven, paths := args, []string(nil)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				heaven, paths = args[:dash], args[dash:]
			}
			if len(heaven) > 1 {
				return fmt.Errorf("one heaven at most, then -- and paths: got %q", heaven)
			}
			name := ""
			if len(heaven) == 1 {
				name = heaven[0]
			}
			commits, err := o.history(name, "commits")
			if err != nil {
				return err
			}
			var items []historyv1alpha1.Commit
			seen := map[string]bool{}
			selectors := paths
			if len(selectors) == 0 {
				selectors = []string{""} // the whole history
			}
			for _, p := range selectors {
				opts := metav1.ListOptions{Limit: limit}
				if p != "" {
					opts.FieldSelector = historyv1alpha1.PathField + "=" + p
				}
				list, err := commits.List(commandContext(cmd), opts)
				if err != nil {
					return err
				}
				for _, u := range list.Items {
					var c historyv1alpha1.Commit
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
						return err
					}
					if !seen[c.Name] {
						seen[c.Name] = true
						items = append(items, c)
					}
				}
			}
			// Newest first across paths.
			slices.SortStableFunc(items, func(a, b historyv1alpha1.Commit) int { return cmp.Compare(b.Revision, a.Revision) })
			if limit > 0 && int64(len(items)) > limit {
				items = items[:limit]
			}
			w := tabwriter.NewWriter(o.streams.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "COMMIT\tREVISION\tAUTHOR\tAGE\tMESSAGE")
			for _, c := range items {
				subject, _, _ := strings.Cut(c.Message, "\n")
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", short(c.Name), c.Revision, c.Author.Name, duration.HumanDuration(time.Since(c.Author.Time.Time)), subject)
			}
			return w.Flush()
		},
	}
	cmd.Flags().Int64Var(&limit, "limit", 50, "At most this many commits (0: all).")
	return cmd
}

func (o *options) diffCommand() *cobra.Command {
	var prefix string
	cmd := &cobra.Command{
		Use:   "diff [HEAVEN]@REV [[HEAVEN][@REV]]",
		Short: "Show the objects that differ between two revisions of a heaven (or the current state, or another heaven's), as YAML",
		Long: `Show the objects that differ between two points of history, each HEAVEN@REVISION
(no heaven: the current context's; no revision: now). Compare with another
heaven at its current state (you need to be able to read its history):

  kubectl heaven diff @12                 what changed since revision 12
  kubectl heaven diff @12 @15             between revisions 12 and 15
  kubectl heaven diff team-a@12 team-b    team-a at 12 against team-b now`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			from, err := parsePoint(args[0])
			if err != nil {
				return err
			}
			var to historyv1alpha1.Point
			if len(args) == 2 {
				if to, err = parsePoint(args[1]); err != nil {
					return err
				}
			}
			// The diff is asked of the heaven whose revisions it names.
			at := from.Heaven
			if from.Revision == 0 && to.Revision != 0 {
				at = to.Heaven
			}
			diffs, err := o.history(at, "diffs")
			if err != nil {
				return err
			}
			d := &historyv1alpha1.Diff{
				TypeMeta: metav1.TypeMeta{APIVersion: historyv1alpha1.SchemeGroupVersion.String(), Kind: "Diff"},
				Spec:     historyv1alpha1.DiffSpec{From: sameHeaven(from, at), To: sameHeaven(to, at), PathPrefix: prefix},
			}
			var out historyv1alpha1.Diff
			if err := create(commandContext(cmd), diffs, d, &out); err != nil {
				return err
			}
			fmt.Fprintf(o.streams.Out, "# %s..%s: %d objects differ\n", short(out.Status.FromCommit), short(out.Status.ToCommit), len(out.Status.Objects))
			for _, obj := range out.Status.Objects {
				fmt.Fprintf(o.streams.Out, "--- %s %s\n", strings.ToLower(string(obj.Change)), obj.Path)
				for _, side := range []struct {
					mark string
					raw  *runtime.RawExtension
				}{{"-", obj.From}, {"+", obj.To}} {
					if side.raw == nil {
						continue
					}
					y, err := yaml.JSONToYAML(side.raw.Raw)
					if err != nil {
						return err
					}
					for _, line := range strings.Split(strings.TrimRight(string(y), "\n"), "\n") {
						fmt.Fprintf(o.streams.Out, "%s %s\n", side.mark, line)
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&prefix, "path", "", "Only objects under this path (core/configmaps/, apps/deployments/default/web).")
	return cmd
}

func (o *options) revertCommand() *cobra.Command {
	var heaven string
	cmd := &cobra.Command{
		Use:   "revert COMMIT|REVISION",
		Short: "Undo a commit of a heaven with a new commit that puts the objects it changed back as they were (refused if they changed since)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reverts, err := o.history(heaven, "reverts")
			if err != nil {
				return err
			}
			r := &historyv1alpha1.Revert{TypeMeta: metav1.TypeMeta{APIVersion: historyv1alpha1.SchemeGroupVersion.String(), Kind: "Revert"}}
			if rev, err := strconv.ParseInt(args[0], 10, 64); err == nil && len(args[0]) < 40 {
				r.Spec.Revision = rev
			} else {
				r.Spec.Commit = args[0]
			}
			var out historyv1alpha1.Revert
			if err := create(commandContext(cmd), reverts, r, &out); err != nil {
				return err
			}
			return o.printUndo(out.Status)
		},
	}
	cmd.Flags().StringVar(&heaven, "heaven", "", "The heaven (default: the current context's).")
	return cmd
}

func (o *options) restoreCommand() *cobra.Command {
	var heaven string
	var rev int64
	cmd := &cobra.Command{
		Use:   "restore KIND/NAME|PATH --to REVISION",
		Short: "Put one object back as it was at a revision (deleting it if it did not exist then), with a new commit: KIND/NAME as kubectl names it (configmap/web, deployment.apps/web; -n for the namespace), or its path <group or core>/<resource>[/<namespace>]/<name>",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if strings.Count(path, "/") == 1 {
				var err error
				if path, err = o.objectPath(heaven, path); err != nil {
					return err
				}
			}
			restores, err := o.history(heaven, "restores")
			if err != nil {
				return err
			}
			r := &historyv1alpha1.Restore{
				TypeMeta: metav1.TypeMeta{APIVersion: historyv1alpha1.SchemeGroupVersion.String(), Kind: "Restore"},
				Spec:     historyv1alpha1.RestoreSpec{Path: path, Revision: rev},
			}
			var out historyv1alpha1.Restore
			if err := create(commandContext(cmd), restores, r, &out); err != nil {
				return err
			}
			return o.printUndo(out.Status)
		},
	}
	cmd.Flags().StringVar(&heaven, "heaven", "", "The heaven (default: the current context's).")
	cmd.Flags().Int64Var(&rev, "to", 0, "The revision to restore the object to.")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// objectPath resolves KIND/NAME (as kubectl takes it: configmap/web,
// deployments.apps/web) with the heaven's discovery into the object's path.
func (o *options) objectPath(heaven, kindName string) (string, error) {
	kind, name, _ := strings.Cut(kindName, "/")
	if heaven == "" {
		loc, err := o.location()
		if err != nil {
			return "", err
		}
		heaven = loc.heaven
	}
	cfg, err := o.heavenConfig(heaven)
	if err != nil {
		return "", err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dc, nil)
	gvr, err := mapper.ResourceFor(schema.ParseGroupResource(kind).WithVersion(""))
	if err != nil {
		return "", fmt.Errorf("%s: %w", kindName, err)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return "", err
	}
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return "", err
	}
	group := gvr.Group
	if group == "" {
		group = "core"
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return group + "/" + gvr.Resource + "/" + name, nil
	}
	namespace, _, err := o.loader().Namespace() // -n, else the context's
	if err != nil || namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return group + "/" + gvr.Resource + "/" + namespace + "/" + name, nil
}

func (o *options) printUndo(s historyv1alpha1.UndoStatus) error {
	if s.Commit == "" {
		fmt.Fprintln(o.streams.Out, "nothing to change")
		return nil
	}
	fmt.Fprintf(o.streams.Out, "commit %s at revision %d\n", short(s.Commit), s.Revision)
	for _, c := range s.Changes {
		what := "restored"
		if c.Deleted {
			what = "deleted"
		}
		fmt.Fprintf(o.streams.Out, "  %s %s\n", what, c.Path)
	}
	return nil
}

// create sends obj to r and decodes the answer into out.
func create(ctx context.Context, r dynamic.ResourceInterface, obj runtime.Object, out any) error {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u, err := r.Create(ctx, &unstructured.Unstructured{Object: raw}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
}

// parsePoint parses [HEAVEN][@REVISION].
func parsePoint(s string) (historyv1alpha1.Point, error) {
	name, rev, found := strings.Cut(s, "@")
	p := historyv1alpha1.Point{Heaven: name}
	if found {
		n, err := strconv.ParseInt(rev, 10, 64)
		if err != nil || n <= 0 {
			return p, fmt.Errorf("%q: the revision after @ must be a positive number", s)
		}
		p.Revision = n
	}
	return p, nil
}

// sameHeaven leaves out the heaven of p when it is the one asked.
func sameHeaven(p historyv1alpha1.Point, asked string) historyv1alpha1.Point {
	if p.Heaven == asked {
		p.Heaven = ""
	}
	return p
}

func (o *options) mergeCommand() *cobra.Command {
	var into, resolution string
	var resources []string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "merge SOURCE [--into TARGET] [--policy Manual|PreferSource|PreferTarget] [--dry-run]",
		Short: "Merge a heaven's current state into another (default: the current context's) once, field by field, as an AutomatedMerge does; --dry-run lists what would change and the conflicts",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			merges, err := o.history(into, "merges")
			if err != nil {
				return err
			}
			m := &historyv1alpha1.Merge{
				TypeMeta: metav1.TypeMeta{APIVersion: historyv1alpha1.SchemeGroupVersion.String(), Kind: "Merge"},
				Spec:     historyv1alpha1.MergeSpec{Source: args[0], Resources: resources, Resolution: resolution},
			}
			raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
			if err != nil {
				return err
			}
			opts := metav1.CreateOptions{}
			if dryRun {
				opts.DryRun = []string{metav1.DryRunAll}
			}
			u, err := merges.Create(commandContext(cmd), &unstructured.Unstructured{Object: raw}, opts)
			if err != nil {
				return err
			}
			var out historyv1alpha1.Merge
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
				return err
			}
			s := out.Status
			switch {
			case s.UpToDate:
				fmt.Fprintf(o.streams.Out, "already up to date with %s\n", args[0])
			case s.Blocked:
				fmt.Fprintf(o.streams.Out, "not merged: %d of %d conflicts need a resolution (resolve them, or choose a --policy)\n", manualConflicts(s.Conflicts), len(s.Conflicts))
			case dryRun:
				fmt.Fprintf(o.streams.Out, "would change %d objects\n", len(s.Changes))
			case s.Commit == "":
				fmt.Fprintln(o.streams.Out, "nothing to change")
			default:
				fmt.Fprintf(o.streams.Out, "merge commit %s at revision %d: %d objects changed\n", short(s.Commit), s.Revision, len(s.Changes))
			}
			for _, c := range s.Changes {
				what := "changed"
				if c.Deleted {
					what = "deleted"
				}
				fmt.Fprintf(o.streams.Out, "  %s %s\n", what, c.Path)
			}
			for _, c := range s.Conflicts {
				fmt.Fprintf(o.streams.Out, "  conflict %s %s: %s\n", c.Path, c.Field, c.Resolution)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "The heaven merged into (default: the current context's).")
	cmd.Flags().StringVar(&resolution, "policy", "", "How every conflict resolves: Manual (default: nothing is merged if there is one), PreferSource or PreferTarget.")
	cmd.Flags().StringSliceVar(&resources, "resources", nil, "Only these <group or core>/<resource> merge (default: all).")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Only say what would change and the conflicts.")
	return cmd
}

// manualConflicts counts the conflicts that no rule resolved: those that
// blocked the merge. The others, resolved by a rule (the --policy, or
// Kubernetes' own, such as for a status both sides reported), are listed
// for the record.
func manualConflicts(conflicts []historyv1alpha1.Conflict) int {
	n := 0
	for _, c := range conflicts {
		if c.Resolution == string(merge.Manual) {
			n++
		}
	}
	return n
}
