// Package completion implements `mirrorctl completion <shell>`.
package completion

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// Shells are the shells `mirrorctl completion` can generate a script for.
var Shells = []string{"bash", "zsh", "fish", "powershell"}

// CompletionOptions are the dependencies and arguments of
// `mirrorctl completion`.
type CompletionOptions struct {
	IO *iostreams.IOStreams
	// Shell is one of Shells.
	Shell string
	// Root is the command tree to generate completions for.
	Root func() *cobra.Command
}

// NewCmdCompletion returns `mirrorctl completion <shell>`. If runF is
// non-nil it is called with the parsed options instead of runCompletion.
func NewCmdCompletion(f *cmdutil.Factory, runF func(*CompletionOptions) error) *cobra.Command {
	opts := &CompletionOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "completion {bash|zsh|fish|powershell}",
		Short: "Generate a shell completion script",
		Long: "Print a completion script for the given shell to stdout. Completion covers\n" +
			"commands, flags and enum values such as -o/--output.\n\n" +
			"bash: add `eval \"$(mirrorctl completion bash)\"` to ~/.bashrc.\n" +
			"zsh: write it to a directory on $fpath, e.g.\n" +
			"  mirrorctl completion zsh > \"${fpath[1]}/_mirrorctl\"\n" +
			"fish: mirrorctl completion fish > ~/.config/fish/completions/mirrorctl.fish\n" +
			"PowerShell: mirrorctl completion powershell | Out-String | Invoke-Expression",
		Example: "$ mirrorctl completion bash > /etc/bash_completion.d/mirrorctl\n" +
			"$ mirrorctl completion zsh > \"${fpath[1]}/_mirrorctl\"",
		ValidArgs: Shells,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdutil.FlagErrorf("expected one shell argument: {bash|zsh|fish|powershell}")
			}
			return cobra.OnlyValidArgs(cmd, args)
		},
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Shell = args[0]
			opts.Root = cmd.Root
			if runF != nil {
				return runF(opts)
			}
			return runCompletion(cmd.Context(), opts)
		},
	}
	return cmd
}

func runCompletion(_ context.Context, opts *CompletionOptions) error {
	root, w := opts.Root(), opts.IO.Out
	switch opts.Shell {
	case "bash":
		return root.GenBashCompletionV2(w, true)
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(w)
	default:
		return cmdutil.FlagErrorf("unsupported shell %q: valid values are {bash|zsh|fish|powershell}", opts.Shell)
	}
}
