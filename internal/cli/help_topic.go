package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
)

// exitCodesHelp is the exit-status table shown by `mirrorctl help exit-codes`
// and at the end of the root command's long help.
var exitCodesHelp = strings.TrimSpace(fmt.Sprintf(`
mirrorctl exits with one of these codes; treat any other code as failure:

  %-3d  OK: the command did what was asked
  %-3d  error: the command failed (network, broker, I/O on a file
       other than the configuration)
  %-3d  usage or config error: bad flags or arguments, or an
       mm2.properties that is missing, unreadable or invalid (each
       problem is reported with its file:line)
  %-3d  a check failed: lag over threshold, group active on the target or
       its state unknown, a named group with nothing to move or not moved
       completely (skip-rewind, not replicated, a commit of unknown
       outcome), verification mismatch, a loss event (replicate --once,
       lag), a flow with a partition nobody copies, no member or no
       leader (status)
  %-3d  interrupted by SIGINT or SIGTERM

With -o json, a failing command also writes a final error object to stderr:
  {"schema_version":1,"error":{"message":"...","exit_code":2}}
`, cmdutil.ExitOK, cmdutil.ExitError, cmdutil.ExitUsage, cmdutil.ExitCheckFailed, cmdutil.ExitInterrupted))

// helpTopics are help-only pseudo-commands: `mirrorctl help <topic>`.
var helpTopics = []struct {
	name, short, long string
}{
	{name: "exit-codes", short: "Exit codes used by mirrorctl", long: exitCodesHelp},
}

// newHelpTopic returns a command that only carries help text, like cli/cli's
// help topics: it has no run function, so cobra lists it under "Additional
// help topics", and both `mirrorctl help <name>` and `mirrorctl <name>` print
// its long text and exit 0.
func newHelpTopic(name, short, long string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name,
		Short: short,
		Long:  long,
	}
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintln(c.OutOrStdout(), c.Long)
	})
	return cmd
}
