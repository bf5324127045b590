// Package configcmd implements the `mirrorctl config` command group; its
// subcommands live in configcmd/validate and configcmd/show.
package configcmd

import (
	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/configcmd/show"
	"github.com/mirrorctl/mirrorctl/internal/cli/configcmd/validate"
)

// NewCmdConfig returns `mirrorctl config` with its subcommands.
func NewCmdConfig(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config <command>",
		Short: "Check and inspect mm2.properties",
		Long: "Check an mm2.properties file the way MirrorMaker 2 reads it, and show the\n" +
			"effective settings of each flow with where each one came from.",
		Example: "$ mirrorctl config validate -c mm2.properties\n$ mirrorctl config show --flow 'us-east->eu-west'",
		RunE:    cmdutil.GroupRunE,
	}
	cmd.AddCommand(validate.NewCmdValidate(f, nil))
	cmd.AddCommand(show.NewCmdShow(f, nil))
	for _, c := range cmd.Commands() {
		c.Annotations = map[string]string{cmdutil.AnnotationChecksFlowDefaults: "true"}
	}
	return cmd
}
