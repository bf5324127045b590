// Package auditcmd implements the `mirrorctl audit` command group; its
// subcommands live in auditcmd/show and auditcmd/verify. The log itself is
// package audit.
package auditcmd

import (
	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/auditcmd/show"
	"github.com/mirrorctl/mirrorctl/internal/cli/auditcmd/verify"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
)

// NewCmdAudit returns `mirrorctl audit` with its subcommands.
func NewCmdAudit(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit <command>",
		Short: "Show and verify the audit log of acting commands",
		Long: "Every command that changes a cluster (failover apply, acl apply, ...) writes\n" +
			"a begin entry to the audit log before its first write and an end entry\n" +
			"after its last, also when it fails or is interrupted: time, OS user, host,\n" +
			"the command line with secrets masked, the config digest, the plan and the\n" +
			"results. Each entry carries the SHA-256 of the line before it, so an edit,\n" +
			"a removal or a reordering shows up in `mirrorctl audit verify`; entries\n" +
			"removed from the end show up only against a head recorded before\n" +
			"(`audit verify --expect-head`).\n\n" +
			"The log is --audit-log, else $MIRRORCTL_AUDIT_LOG, else the current\n" +
			"context's audit-log (see 'mirrorctl context'), else\n" +
			"$XDG_STATE_HOME/mirrorctl/audit.jsonl (~/.local/state/mirrorctl/audit.jsonl).",
		Example: "$ mirrorctl audit show --since 24h\n$ mirrorctl audit verify",
		RunE:    cmdutil.GroupRunE,
	}
	cmd.AddCommand(show.NewCmdShow(f, nil))
	cmd.AddCommand(verify.NewCmdVerify(f, nil))
	return cmd
}
