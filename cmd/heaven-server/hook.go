package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/heaven-dev/heaven/pkg/githook"
	"github.com/heaven-dev/heaven/pkg/server"
)

// NewHookCommand is "heaven-server hook": the git hooks heaven-server
// installs into its repository.
func NewHookCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hook",
		Short: "Git hooks of heaven-server's repository (run by git, not by people)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "pre-receive",
		Short: "Refuse a git push of files the server would not serve",
		Long: `Run by git as <data-dir>/heavens.git/hooks/pre-receive (heaven-server installs
it on every start, see --pre-receive-hook): reads "<old> <new> <ref>" lines on
stdin and checks every file the push adds or changes on a heaven's branch as
the server reads it: JSON or YAML objects at <group or core>/<resource>/
[<namespace>/]<name>.json|.yaml, of the kind of their resource, named as their
path says, at most 1.5 MiB, and (for built-in types) decodable. Each file that
fails is named with the reason, and the push is refused; the person pushing
sees it in the output of git push.`,
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := server.ObjectFiles()
			if err != nil {
				return err
			}
			err = githook.PreReceive(cmd.Context(), os.Stdin, os.Stderr, files)
			if err != nil {
				cmd.SilenceErrors = true // the files were named already
				return errors.New("push refused")
			}
			return nil
		},
	})
	return cmd
}
