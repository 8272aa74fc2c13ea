package heaven

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/heaven-dev/heaven/pkg/apis/heaven/v1alpha1"
)

func (o *options) listCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List every heaven: name, type, phase, revision, head commit, what it was forked from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			heavens, err := o.heavens()
			if err != nil {
				return err
			}
			list, err := heavens.List(commandContext(cmd), metav1.ListOptions{})
			if err != nil {
				return err
			}
			current := ""
			if loc, err := o.location(); err == nil {
				current = loc.heaven
			}
			w := tabwriter.NewWriter(o.streams.Out, 0, 8, 2, ' ', 0)
			fmt.Fprintln(w, "CURRENT\tNAME\tTYPE\tPHASE\tREVISION\tHEAD\tFORKED FROM")
			// root holds the Heaven objects and has none of its own.
			mark := ""
			if current == rootHeaven {
				mark = "*"
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t\t\t\n", mark, rootHeaven, v1alpha1.HeavenTypeGeneric, v1alpha1.HeavenPhaseReady)
			for _, h := range list.Items {
				mark := ""
				if h.Name == current {
					mark = "*"
				}
				fork := ""
				if f := h.Status.ForkedFrom; f != nil {
					fork = fmt.Sprintf("%s@%d", f.Heaven, f.Revision)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", mark, h.Name, v1alpha1.TypeOf(&h), h.Status.Phase, h.Status.Revision, short(h.Status.Head), fork)
			}
			return w.Flush()
		},
	}
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func (o *options) currentCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "current",
		Short: "Print the heaven the current context points at",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			loc, err := o.location()
			if err != nil {
				return err
			}
			fmt.Fprintln(o.streams.Out, loc.heaven)
			return nil
		},
	}
}

func (o *options) createCommand() *cobra.Command {
	var fork, typ string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "create NAME [--fork FROM[@REVISION]] [--type generic|kubernetes]",
		Short: "Create a heaven (a Heaven object in root) and wait until it is ready",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h := &v1alpha1.Heaven{
				ObjectMeta: metav1.ObjectMeta{Name: args[0]},
				Spec:       v1alpha1.HeavenSpec{Type: v1alpha1.HeavenType(typ)},
			}
			if fork != "" {
				from, rev, err := parseAt(fork)
				if err != nil {
					return fmt.Errorf("--fork: %w", err)
				}
				h.Spec.Fork = &v1alpha1.Fork{Heaven: from, Revision: rev}
			}
			heavens, err := o.heavens()
			if err != nil {
				return err
			}
			ctx := commandContext(cmd)
			if _, err := heavens.Create(ctx, h, metav1.CreateOptions{}); err != nil {
				return err
			}
			var last *v1alpha1.Heaven
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
				got, err := heavens.Get(ctx, args[0], metav1.GetOptions{})
				if err != nil {
					return false, nil
				}
				last = got
				if last.Status.Phase == v1alpha1.HeavenPhaseFailed {
					return false, fmt.Errorf("heaven %s failed: %s", args[0], last.Status.Message)
				}
				return last.Status.Phase == v1alpha1.HeavenPhaseReady, nil
			})
			if err != nil {
				return fmt.Errorf("heaven %s created, but not ready: %w", args[0], err)
			}
			fmt.Fprintf(o.streams.Out, "heaven %s created at revision %d (%s)\n", args[0], last.Status.Revision, short(last.Status.Head))
			return nil
		},
	}
	cmd.Flags().StringVar(&fork, "fork", "", "Start as a copy of heaven FROM, at REVISION if given (FROM@REVISION), else at its current revision.")
	cmd.Flags().StringVar(&typ, "type", string(v1alpha1.HeavenTypeGeneric), "The API the heaven serves: generic (namespaces, config maps, secrets, RBAC, CRDs, Deployments, ...) or kubernetes (all of kube-apiserver's, for kube-controller-manager and kube-scheduler). It can't change later.")
	cmd.Flags().DurationVar(&timeout, "timeout", time.Minute, "How long to wait for the heaven to be ready.")
	return cmd
}

// parseAt splits NAME[@REVISION].
func parseAt(s string) (string, int64, error) {
	name, rev, found := strings.Cut(s, "@")
	if !found {
		return name, 0, nil
	}
	var n int64
	if _, err := fmt.Sscan(rev, &n); err != nil || n <= 0 {
		return "", 0, fmt.Errorf("%q: the revision after @ must be a positive number", s)
	}
	return name, n, nil
}

func (o *options) deleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a heaven's Heaven object: it is no longer served; its branch stays unless spec.deletePolicy is Delete",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			heavens, err := o.heavens()
			if err != nil {
				return err
			}
			if err := heavens.Delete(commandContext(cmd), args[0], metav1.DeleteOptions{}); err != nil {
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("no heaven %s", args[0])
				}
				return err
			}
			fmt.Fprintf(o.streams.Out, "heaven %s deleted\n", args[0])
			return nil
		},
	}
}
