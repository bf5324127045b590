package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	aclplancmd "github.com/mirrorctl/mirrorctl/internal/cli/aclplan"
	"github.com/mirrorctl/mirrorctl/internal/cli/auditcmd"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/completion"
	"github.com/mirrorctl/mirrorctl/internal/cli/configcmd"
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
)

// defaultConfigFile is used when neither -c nor $MIRRORCTL_CONFIG is set.
const defaultConfigFile = "mm2.properties"

// globalOptions are the root's persistent flags after flag and environment
// resolution (flag > MIRRORCTL_* env > default).
type globalOptions struct {
	configPath string
	output     string
	format     output.Format
	noColor    bool
	wide       bool
	verbose    int
	auditLog   string

	// started is set when a command's RunE begins; an error returned
	// before that (bad flag, bad argument count, unknown command, missing
	// required flag) is a usage error.
	started bool
}

// envBindings maps each global flag to its environment variable.
var envBindings = []struct{ flag, env string }{
	{"config", "MIRRORCTL_CONFIG"},
	{"output", "MIRRORCTL_OUTPUT"},
	{"no-color", "MIRRORCTL_NO_COLOR"},
	{"verbose", "MIRRORCTL_VERBOSE"},
	{"audit-log", "MIRRORCTL_AUDIT_LOG"},
}

// NewCmdRoot returns the `mirrorctl` command with its persistent flags, its
// subcommands and help topics. Each runnable command's RunE is wrapped so the
// global flags are resolved (with viper: flag > MIRRORCTL_* env > default)
// and applied to f.IO and f.Logger before it runs; subcommands therefore need
// no PersistentPreRun of their own.
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
			"MIRRORCTL_VERBOSE and MIRRORCTL_AUDIT_LOG set the flags of the same name\n" +
			"(a flag wins); NO_COLOR disables colour.\n\n" +
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
	pf.StringVarP(&g.configPath, "config", "c", "", "Path to mm2.properties (default $MIRRORCTL_CONFIG, then ./"+defaultConfigFile+")")
	_ = cmd.MarkPersistentFlagFilename("config", "properties")
	cmdutil.StringEnumFlag(cmd, pf, &g.output, "output", "o", string(output.FormatTable), output.Formats(), "Output format")
	pf.BoolVar(&g.noColor, "no-color", false, "Disable colour (also NO_COLOR)")
	pf.BoolVar(&g.wide, "wide", false, "Print tables in full: no column narrowed to the terminal, aligned with a header even when piped (try | less -S)")
	pf.CountVarP(&g.verbose, "verbose", "v", "Log more to stderr: -v info, -vv debug")
	pf.StringVar(&g.auditLog, "audit-log", "", "Audit log file (default $MIRRORCTL_AUDIT_LOG, then $XDG_STATE_HOME/mirrorctl/audit.jsonl)")
	_ = cmd.MarkPersistentFlagFilename("audit-log", "jsonl")

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
	for _, t := range helpTopics {
		cmd.AddCommand(newHelpTopic(t.name, t.short, t.long))
	}

	completion.Register(cmd, f)
	wrapRunE(cmd, func() error { return resolveGlobals(cmd, f, g) }, g)
	return cmd
}

// wrapRunE walks the tree and wraps every RunE so that before it runs,
// started is set and resolve is called.
func wrapRunE(c *cobra.Command, resolve func() error, g *globalOptions) {
	if run := c.RunE; run != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			g.started = true
			if err := resolve(); err != nil {
				return err
			}
			return run(cmd, args)
		}
	}
	for _, sub := range c.Commands() {
		wrapRunE(sub, resolve, g)
	}
}

// resolveGlobals applies flag > MIRRORCTL_* env > default to the global
// flags, then configures colour and log level. A bad env value is a usage
// error naming the variable.
func resolveGlobals(root *cobra.Command, f *cmdutil.Factory, g *globalOptions) error {
	v := viper.New()
	for _, b := range envBindings {
		if err := v.BindPFlag(b.flag, root.PersistentFlags().Lookup(b.flag)); err != nil {
			return fmt.Errorf("binding --%s: %w", b.flag, err)
		}
		if err := v.BindEnv(b.flag, b.env); err != nil {
			return fmt.Errorf("binding %s: %w", b.env, err)
		}
	}
	g.configPath = v.GetString("config")
	if g.configPath == "" {
		g.configPath = defaultConfigFile
	}
	format, err := output.ParseFormat(v.GetString("output"))
	if err != nil {
		return cmdutil.FlagErrorf("%s (from --output or MIRRORCTL_OUTPUT)", err)
	}
	g.format, g.output = format, string(format)
	if err := checkEnvValues(root); err != nil {
		return err
	}
	g.noColor = v.GetBool("no-color")
	g.verbose = v.GetInt("verbose")
	g.auditLog = v.GetString("audit-log")

	f.IO.SetWideTables(g.wide)
	if g.noColor || os.Getenv("NO_COLOR") != "" {
		f.IO.SetColorDisabled(true)
	}
	if s, ok := f.Logger.Handler().(levelSetter); ok {
		s.SetLevel(verbosityLevel(g.verbose))
	}
	return nil
}

// checkEnvValues rejects a MIRRORCTL_* value that viper would otherwise read
// as the zero value without a word (MIRRORCTL_VERBOSE=lots as 0,
// MIRRORCTL_NO_COLOR=yes as false). A flag given on the command line wins
// and its variable is not read, so it is not checked either. An empty value
// counts as unset, as it does for viper.
func checkEnvValues(root *cobra.Command) error {
	for _, b := range envBindings {
		val := os.Getenv(b.env)
		if val == "" || root.PersistentFlags().Changed(b.flag) {
			continue
		}
		switch b.flag {
		case "no-color":
			if _, err := strconv.ParseBool(val); err != nil {
				return cmdutil.FlagErrorf("invalid %s %q: want true or false (also 1 or 0)", b.env, val)
			}
		case "verbose":
			if n, err := strconv.Atoi(val); err != nil || n < 0 {
				return cmdutil.FlagErrorf("invalid %s %q: want a count of -v, 0 or more (1 info, 2 debug)", b.env, val)
			}
		}
	}
	return nil
}
