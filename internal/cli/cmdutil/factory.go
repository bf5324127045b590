package cmdutil

import (
	"log/slog"
	"time"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
)

// Factory hands commands their dependencies. Function-valued fields are lazy:
// nothing is read, parsed or dialled until a command calls them, and each is
// memoised, so `mirrorctl version` never touches mm2.properties and a command
// that never talks to Kafka never opens a connection. internal/cli builds the
// Factory (see its factory.go) and closes what it opened when the run ends.
//
// A command copies the fields it needs into its Options in NewCmdX, so its
// run function depends on Options only and tests can replace any of them.
type Factory struct {
	// IO is the only door to the terminal.
	IO *iostreams.IOStreams
	// Logger writes to stderr; its level follows -v (0 warn, 1 info,
	// 2+ debug). Stable attribute keys: cluster, topic, partition, group, flow.
	Logger *slog.Logger
	// Now returns the current time; tests pin it.
	Now func() time.Time

	// ConfigPath returns the mm2.properties path chosen by -c/--config, else
	// $MIRRORCTL_CONFIG, else the current context's, else "mm2.properties"
	// in the working directory. Valid once flags are parsed (inside RunE).
	ConfigPath func() string
	// Config loads ConfigPath() with config.Load on first call and returns
	// the same result (value and error) afterwards. The error wraps one
	// *config.Error per problem (errors.Join), which maps to exit 2. Warnings
	// are not printed here: commands report cfg.Warnings (see PrintWarnings).
	Config func() (*config.Config, error)
	// Kafka returns the one client factory, built on first call from
	// Config(); it maps a cluster alias and role to that cluster's client
	// properties. Closed by internal/cli when the command returns.
	Kafka func() (*kafka.Factory, error)
	// Output returns the -o/--output format (or $MIRRORCTL_OUTPUT).
	Output func() output.Format

	// AuditPath returns the audit log chosen by --audit-log, else
	// $MIRRORCTL_AUDIT_LOG, else the current context's, else
	// audit.DefaultPath(). Reading it opens
	// nothing (audit show/verify use it).
	AuditPath func() string
	// Audit opens AuditPath() for appending (creating it, mode 0600) on
	// first call and returns the same *audit.Log (or error) afterwards.
	// Acting commands call it before their first write, then Log.Begin and
	// Operation.End. Closed by internal/cli when the command returns.
	Audit func() (*audit.Log, error)
	// Settings loads mirrorctl's settings file (settings.Path: contexts)
	// on first call and returns the same result afterwards; a missing file
	// is an empty one. Errors are *settings.Error (exit 2).
	Settings func() (*settings.File, error)
	// Resolved returns the global settings (config, output, no-color,
	// verbose, audit-log) and the default source and target, each with
	// its origin (flag, MIRRORCTL_* variable, context, default), sorted as
	// settings.ContextKeys. Valid inside RunE.
	Resolved func() []Resolved

	// SetStopBudget tells the process how long the command takes at most
	// to stop once SIGINT or SIGTERM arrived (replicate's stop budget):
	// internal/cli.Main exits 130 if it is still running a moment after
	// that, whatever is stuck. Commands that set nothing get
	// DefaultStopBudget.
	SetStopBudget func(time.Duration)
}
