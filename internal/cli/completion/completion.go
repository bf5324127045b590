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
			"commands, flags and enum values such as -o/--output, and, read when you\n" +
			"press Tab: cluster aliases (--source, --target, --cluster) and flows (--flow)\n" +
			"from the config (-c, $MIRRORCTL_CONFIG, the current context's, or\n" +
			"./mm2.properties), consumer groups (--group) and topics (--topic) from the\n" +
			"cluster, asked for at most 2s; when the config or the cluster cannot be\n" +
			"read, nothing is offered. Scripts for every shell are also committed under\n" +
			"completions/ (`make completions`).\n\n" +
			"bash: needs bash 4.1 or later and the bash-completion package (apt-get\n" +
			"  install bash-completion, brew install bash-completion@2); then add\n" +
			"  `eval \"$(mirrorctl completion bash)\"` to ~/.bashrc, or write it to\n" +
			"  /etc/bash_completion.d/mirrorctl.\n" +
			"zsh: completion must be on (`autoload -U compinit; compinit` in ~/.zshrc);\n" +
			"  write the script to a directory on $fpath, e.g.\n" +
			"  mirrorctl completion zsh > \"${fpath[1]}/_mirrorctl\", and start a new shell.\n" +
			"fish: nothing to install;\n" +
			"  mirrorctl completion fish > ~/.config/fish/completions/mirrorctl.fish\n" +
			"PowerShell: nothing to install; add to your $PROFILE:\n" +
			"  mirrorctl completion powershell | Out-String | Invoke-Expression",
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
