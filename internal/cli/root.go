package cli

import (
	"strings"

	"github.com/spf13/cobra"

	aclplancmd "github.com/mirrorctl/mirrorctl/internal/cli/aclplan"
	"github.com/mirrorctl/mirrorctl/internal/cli/auditcmd"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/completion"
	"github.com/mirrorctl/mirrorctl/internal/cli/configcmd"
	"github.com/mirrorctl/mirrorctl/internal/cli/contextcmd"
	"github.com/mirrorctl/mirrorctl/internal/cli/demo"
	"github.com/mirrorctl/mirrorctl/internal/cli/dump"
	failovercmd "github.com/mirrorctl/mirrorctl/internal/cli/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	mm2cmd "github.com/mirrorctl/mirrorctl/internal/cli/mm2"
	replicatecmd "github.com/mirrorctl/mirrorctl/internal/cli/replicate"
	statuscmd "github.com/mirrorctl/mirrorctl/internal/cli/status"
	translatecmd "github.com/mirrorctl/mirrorctl/internal/cli/translate"
	"github.com/mirrorctl/mirrorctl/internal/cli/version"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
)

// defaultConfigFile is used when neither -c, $MIRRORCTL_CONFIG nor the
// context sets one.
const defaultConfigFile = "mm2.properties"

// globalOptions are the root's persistent flags after resolution (flag >
// MIRRORCTL_* env > current context > default, see resolveGlobals).
type globalOptions struct {
	configPath string
	output     string
	format     output.Format
	noColor    bool
	wide       bool
	verbose    int
	auditLog   string
	// contextName is --context: the settings file's context to use
	// instead of its current-context.
	contextName string
	// resolved are the values resolved by resolveGlobals, with their
	// origins, for `config show` (cmdutil.Factory.Resolved).
	resolved []cmdutil.Resolved

	// started is set when a command's RunE begins; an error returned
	// before that (bad flag, bad argument count, unknown command, missing
	// required flag) is a usage error.
	started bool
}

// globalBindings maps each global flag to its environment variable and its
// key in a context of the settings file (internal/settings).
var globalBindings = []struct{ flag, env, key string }{
	{"config", "MIRRORCTL_CONFIG", settings.KeyConfig},
	{"output", "MIRRORCTL_OUTPUT", settings.KeyOutput},
	{"no-color", "MIRRORCTL_NO_COLOR", settings.KeyNoColor},
	{"verbose", "MIRRORCTL_VERBOSE", settings.KeyVerbose},
	{"audit-log", "MIRRORCTL_AUDIT_LOG", settings.KeyAuditLog},
}

// flowBindings are the flow flags (--source, --target) a context or a
// MIRRORCTL_* variable gives a default to, on every command that has them.
var flowBindings = []struct{ flag, env, key string }{
	{"source", "MIRRORCTL_SOURCE", settings.KeySource},
	{"target", "MIRRORCTL_TARGET", settings.KeyTarget},
}

// envContext names the context to use instead of the settings file's
// current-context (--context wins).
const envContext = "MIRRORCTL_CONTEXT"

// NewCmdRoot returns the `mirrorctl` command with its persistent flags, its
// subcommands and help topics. Each runnable command's RunE is wrapped so the
// global flags are resolved (with viper: flag > MIRRORCTL_* env > current
// context > default) and applied to f.IO and f.Logger, and the command's
// --source/--target get their defaults from MIRRORCTL_SOURCE/TARGET or the
// context, before it runs; subcommands therefore need no PersistentPreRun of
// their own.
func NewCmdRoot(f *cmdutil.Factory, g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirrorctl <command> [flags]",
		Short: "Replicate Kafka topics like MirrorMaker 2 and fail consumer groups over",
		Long: "mirrorctl mirrors Kafka topics between clusters the way MirrorMaker 2 does,\n" +
			"from the same mm2.properties file and with byte-compatible offset-syncs,\n" +
			"checkpoints and heartbeats, and plans, applies and verifies consumer-group\n" +
			"failover.\n\n" +
			"Data goes to stdout; status lines, warnings, logs and errors go to stderr.\n\n" +
			"Environment: MIRRORCTL_CONFIG, MIRRORCTL_OUTPUT, MIRRORCTL_NO_COLOR,\n" +
			"MIRRORCTL_VERBOSE and MIRRORCTL_AUDIT_LOG set the flags of the same name,\n" +
			"MIRRORCTL_SOURCE and MIRRORCTL_TARGET the --source and --target of the\n" +
			"commands that take a flow (a flag wins); NO_COLOR disables colour.\n\n" +
			"Contexts: a context in mirrorctl's settings file names a cluster pair once\n" +
			"(mm2.properties, source, target, audit log, output); see 'mirrorctl context\n" +
			"--help'. Precedence: flag > MIRRORCTL_* variable > context > default;\n" +
			"'mirrorctl config show' says where each value came from.\n\n" +
			"EXIT STATUS\n\n" + exitCodesHelp,
		Example: strings.Join([]string{
			"$ mirrorctl config validate -c mm2.properties",
			"$ mirrorctl config show --flow 'us-east->eu-west' -o json",
			"$ mirrorctl help exit-codes",
		}, "\n"),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.CompletionOptions.DisableDefaultCmd = true // our own completion command

	pf := cmd.PersistentFlags()
	pf.StringVarP(&g.configPath, "config", "c", "", "Path to mm2.properties (default $MIRRORCTL_CONFIG, then the context's, then ./"+defaultConfigFile+")")
	_ = cmd.MarkPersistentFlagFilename("config", "properties")
	cmdutil.StringEnumFlag(cmd, pf, &g.output, "output", "o", string(output.FormatTable), output.Formats(), "Output format")
	pf.BoolVar(&g.noColor, "no-color", false, "Disable colour (also NO_COLOR)")
	pf.BoolVar(&g.wide, "wide", false, "Print tables in full: no column narrowed to the terminal, aligned with a header even when piped (try | less -S)")
	pf.CountVarP(&g.verbose, "verbose", "v", "Log more to stderr: -v info, -vv debug, -vvv also franz-go's requests")
	pf.StringVar(&g.auditLog, "audit-log", "", "Audit log file (default $MIRRORCTL_AUDIT_LOG, then the context's, then $XDG_STATE_HOME/mirrorctl/audit.jsonl)")
	_ = cmd.MarkPersistentFlagFilename("audit-log", "jsonl")
	pf.StringVar(&g.contextName, "context", "", "Use this context of the settings file instead of its current one (default $"+envContext+")")
	_ = cmd.RegisterFlagCompletionFunc("context", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		sf, err := f.Settings()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return sf.Names(), cobra.ShellCompDirectiveNoFileComp
	})

	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return cmdutil.FlagErrorWrap(err) })

	cmd.AddCommand(version.NewCmdVersion(f, nil))
	cmd.AddCommand(completion.NewCmdCompletion(f, nil))
	cmd.AddCommand(configcmd.NewCmdConfig(f))
	cmd.AddCommand(replicatecmd.NewCmdReplicate(f, nil))
	cmd.AddCommand(translatecmd.NewCmdTranslate(f, nil))
	cmd.AddCommand(failovercmd.NewCmdFailover(f, nil))
	cmd.AddCommand(failovercmd.NewCmdFailback(f, nil))
	cmd.AddCommand(failovercmd.NewCmdFence(f))
	cmd.AddCommand(demo.NewCmdDemo(f, nil))
	cmd.AddCommand(dump.NewCmdCheckpoints(f))
	cmd.AddCommand(dump.NewCmdOffsetSyncs(f))
	cmd.AddCommand(dump.NewCmdHeartbeats(f))
	cmd.AddCommand(aclplancmd.NewCmdACLPlan(f, nil))
	cmd.AddCommand(lag.NewCmdLag(f, nil))
	cmd.AddCommand(statuscmd.NewCmdStatus(f, nil))
	cmd.AddCommand(auditcmd.NewCmdAudit(f))
	cmd.AddCommand(mm2cmd.NewCmdMM2(f))
	cmd.AddCommand(contextcmd.NewCmdContext(f))
	for _, t := range helpTopics {
		cmd.AddCommand(newHelpTopic(t.name, t.short, t.long))
	}

	completion.Register(cmd, f)
	wrapRunE(cmd, func(run *cobra.Command) error { return resolveGlobals(cmd, run, f, g) }, g)
	return cmd
}

// wrapRunE walks the tree and wraps every RunE so that before it runs,
// started is set and resolve is called with the command about to run.
func wrapRunE(c *cobra.Command, resolve func(*cobra.Command) error, g *globalOptions) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			g.started = true
			if err := resolve(cmd); err != nil {
				return err
			}
			return run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		wrapRunE(sub, resolve, g)
	}
}
