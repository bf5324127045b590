// Package contextcmd implements `mirrorctl context` (list, use, show, set,
// delete): named contexts in mirrorctl's settings file (internal/settings),
// each naming a cluster pair once, in the style of kubectl's contexts and
// rpk's profiles.
package contextcmd

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
)

// Options are the dependencies and arguments shared by the context verbs.
type Options struct {
	IO       *iostreams.IOStreams
	Output   func() output.Format
	Settings func() (*settings.File, error)
	// LoadConfig reads an mm2.properties to check a context's aliases
	// (config.Load; tests replace it).
	LoadConfig func(path string) (*config.Config, error)

	// Name is the context argument ("" for `show` without one).
	Name string
	// Values are `set`'s flags that were given, by context key ("" unsets
	// nothing: see Unset).
	Values map[string]string
	// Unset are the keys `set --unset` removes.
	Unset []string
	// Use makes the context current (`set --use`).
	Use bool
}

const longHelp = "A context names a cluster pair once: the mm2.properties file, the default\n" +
	"source and target aliases (the --source/--target of translate, lag,\n" +
	"failover, fence, and the dump commands), the audit log, the output format,\n" +
	"no-color and verbosity. The current context supplies them to every command.\n\n" +
	"Precedence, for each value: a flag, then a MIRRORCTL_* variable\n" +
	"(MIRRORCTL_CONFIG, MIRRORCTL_SOURCE, MIRRORCTL_TARGET, MIRRORCTL_OUTPUT,\n" +
	"MIRRORCTL_AUDIT_LOG, MIRRORCTL_NO_COLOR, MIRRORCTL_VERBOSE), then the\n" +
	"context, then the default. --context (or MIRRORCTL_CONTEXT) picks a context\n" +
	"for one command. 'mirrorctl config show' lists each value and its origin.\n\n" +
	"The settings file is $MIRRORCTL_SETTINGS, else\n" +
	"$XDG_CONFIG_HOME/mirrorctl/config.yaml, else ~/.config/mirrorctl/config.yaml.\n" +
	"It is YAML, written atomically with mode 0600; an unknown key or a bad value\n" +
	"in it is an error naming the file, line and key. A context holds no secrets."

// NewCmdContext returns `mirrorctl context` with its subcommands.
func NewCmdContext(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context <command>",
		Short: "Name a cluster pair once: list, use, show, set and delete contexts",
		Long:  longHelp,
		Example: "$ mirrorctl context set prod --config /etc/mirrorctl/prod.properties --source us-east --target eu-west --use\n" +
			"$ mirrorctl context list\n" +
			"$ mirrorctl context use staging\n" +
			"$ mirrorctl --context prod lag",
		RunE: cmdutil.GroupRunE,
	}
	cmd.AddCommand(NewCmdList(f, nil), NewCmdUse(f, nil), NewCmdShow(f, nil), NewCmdSet(f, nil), NewCmdDelete(f, nil))
	for _, c := range cmd.Commands() {
		c.Annotations = map[string]string{cmdutil.AnnotationEditsSettings: "true"}
	}
	return cmd
}

func newOptions(f *cmdutil.Factory) *Options {
	return &Options{IO: f.IO, Output: f.Output, Settings: f.Settings, LoadConfig: func(p string) (*config.Config, error) { return config.Load(p) }, Values: map[string]string{}}
}

// completeNames completes the first argument with the contexts' names.
func completeNames(opts *Options) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 || opts.Settings == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		sf, err := opts.Settings()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return sf.Names(), cobra.ShellCompDirectiveNoFileComp
	}
}

func run(cmd *cobra.Command, opts *Options, runF func(*Options) error, def func(context.Context, *Options) error) error {
	if runF != nil {
		return runF(opts)
	}
	return def(cmd.Context(), opts)
}

// Entry is one context in `context list -o json` and `context show -o json`.
// Paths are shown with any credentials before '@' masked.
type Entry struct {
	Name        string `json:"name"`
	Current     bool   `json:"current"`
	Description string `json:"description,omitempty"`
	Config      string `json:"config,omitempty"`
	Source      string `json:"source,omitempty"`
	Target      string `json:"target,omitempty"`
	AuditLog    string `json:"audit_log,omitempty"`
	Output      string `json:"output,omitempty"`
	NoColor     string `json:"no_color,omitempty"`
	Verbose     string `json:"verbose,omitempty"`
}

func entry(sf *settings.File, c *settings.Context) Entry {
	return Entry{
		Name: c.Name, Current: sf.Current == c.Name, Description: c.Description,
		Config: settings.DisplayPath(c.Config), Source: c.Source, Target: c.Target,
		AuditLog: settings.DisplayPath(c.AuditLog), Output: c.Output, NoColor: c.NoColor, Verbose: c.Verbose,
	}
}

// ListResult is the JSON document of `context list -o json`.
type ListResult struct {
	output.Envelope
	// File is the settings file read.
	File string `json:"file"`
	// Current is the current context's name, "" for none.
	Current string `json:"current"`
	// Contexts sorted by name.
	Contexts []Entry `json:"contexts"`
}

// NewCmdList returns `mirrorctl context list`.
func NewCmdList(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the contexts, the current one marked",
		Long: "List the contexts of the settings file sorted by name, the current one\n" +
			"marked with *, with the cluster pair each names. No cluster is contacted.",
		Example: "$ mirrorctl context list\n$ mirrorctl context list -o json",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return run(cmd, opts, runF, runList) },
	}
}

func runList(_ context.Context, opts *Options) error {
	sf, err := opts.Settings()
	if err != nil {
		return err
	}
	res := ListResult{Envelope: output.NewEnvelope(), File: settings.DisplayPath(sf.Path), Current: sf.Current, Contexts: []Entry{}}
	for _, name := range sf.Names() {
		c, _ := sf.Context(name)
		res.Contexts = append(res.Contexts, entry(sf, c))
	}
	if opts.Output() == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	if len(res.Contexts) == 0 {
		cmdutil.Notef(opts.IO, "no contexts in %s; create one with 'mirrorctl context set <name> --config <file> --source <alias> --target <alias>'", res.File)
		return nil
	}
	t := output.NewTable("current", "name", "config", "source", "target", "output", "description")
	for _, e := range res.Contexts {
		mark := ""
		if e.Current {
			mark = "*"
		}
		t.AddRow(mark, e.Name, e.Config, e.Source, e.Target, e.Output, e.Description)
	}
	return t.Render(opts.IO, opts.Output())
}

// NewCmdUse returns `mirrorctl context use`.
func NewCmdUse(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	return &cobra.Command{
		Use:   "use <name>",
		Short: "Make a context the current one",
		Long: "Make the named context current: every later command takes its values\n" +
			"(below flags and MIRRORCTL_* variables). A name the settings file does not\n" +
			"define is a usage error (exit 2) listing the contexts.",
		Example:           "$ mirrorctl context use prod",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return run(cmd, opts, runF, runUse)
		},
	}
}

func runUse(_ context.Context, opts *Options) error {
	sf, err := opts.Settings()
	if err != nil {
		return err
	}
	if _, ok := sf.Context(opts.Name); !ok {
		return unknown(sf, opts.Name)
	}
	sf.Current = opts.Name
	if err := sf.Save(); err != nil {
		return err
	}
	cmdutil.Successf(opts.IO, "current context is now %s (%s)", opts.Name, settings.DisplayPath(sf.Path))
	return nil
}

func unknown(sf *settings.File, name string) error {
	names := sf.Names()
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return cmdutil.FlagErrorf("no context %q in %s (contexts: %s)", name, settings.DisplayPath(sf.Path), list)
}

// ShowResult is the JSON document of `context show -o json`.
type ShowResult struct {
	output.Envelope
	File    string `json:"file"`
	Context Entry  `json:"context"`
}

// NewCmdShow returns `mirrorctl context show`.
func NewCmdShow(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	return &cobra.Command{
		Use:   "show [<name>]",
		Short: "Show a context's values (the current one by default)",
		Long: "Show the values the named context (the current one without a name) sets,\n" +
			"one row per key with its line in the settings file. 'mirrorctl config\n" +
			"show' shows what is in force once flags and variables are applied.",
		Example:           "$ mirrorctl context show\n$ mirrorctl context show prod -o json",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeNames(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return run(cmd, opts, runF, runShow)
		},
	}
}

func runShow(_ context.Context, opts *Options) error {
	sf, err := opts.Settings()
	if err != nil {
		return err
	}
	name := opts.Name
	if name == "" {
		if name = sf.Current; name == "" {
			return cmdutil.FlagErrorf("no current context in %s: name one, or choose one with 'mirrorctl context use <name>'", settings.DisplayPath(sf.Path))
		}
	}
	c, ok := sf.Context(name)
	if !ok {
		return unknown(sf, name)
	}
	if opts.Output() == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, ShowResult{Envelope: output.NewEnvelope(), File: settings.DisplayPath(sf.Path), Context: entry(sf, c)})
	}
	t := output.NewTable("key", "value", "line")
	for _, k := range settings.ContextKeys {
		v := c.Get(k)
		if v == "" {
			continue
		}
		if k == settings.KeyConfig || k == settings.KeyAuditLog {
			v = settings.DisplayPath(v)
		}
		line := ""
		if n := c.Line(k); n > 0 {
			line = strconv.Itoa(n)
		}
		t.AddRow(k, v, line)
	}
	if sf.Current == name {
		t.AddRow("current", "true", strconv.Itoa(sf.CurrentLine))
	}
	return t.Render(opts.IO, opts.Output())
}

// NewCmdDelete returns `mirrorctl context delete`.
func NewCmdDelete(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	return &cobra.Command{
		Use:     "delete <name>",
		Aliases: []string{"rm"},
		Short:   "Delete a context",
		Long: "Delete the named context from the settings file. Deleting the current\n" +
			"context leaves none current, and says so. A name the file does not define\n" +
			"is a usage error (exit 2).",
		Example:           "$ mirrorctl context delete staging",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return run(cmd, opts, runF, runDelete)
		},
	}
}

func runDelete(_ context.Context, opts *Options) error {
	sf, err := opts.Settings()
	if err != nil {
		return err
	}
	wasCurrent := sf.Current == opts.Name
	if !sf.Delete(opts.Name) {
		return unknown(sf, opts.Name)
	}
	if err := sf.Save(); err != nil {
		return err
	}
	cmdutil.Successf(opts.IO, "deleted context %s from %s", opts.Name, settings.DisplayPath(sf.Path))
	if wasCurrent {
		cmdutil.Notef(opts.IO, "%s was the current context: none is current now ('mirrorctl context use <name>')", opts.Name)
	}
	return nil
}

// setFlags are `context set`'s value flags, by context key.
var setFlags = []struct{ key, usage string }{
	{settings.KeyConfig, "Path to the mm2.properties `file` (stored absolute)"},
	{settings.KeySource, "Default source cluster `alias` (--source of the flow commands)"},
	{settings.KeyTarget, "Default target cluster `alias` (--target of the flow commands)"},
	{settings.KeyAuditLog, "Audit log `file` (stored absolute)"},
	{settings.KeyOutput, "Output `format`: table, json, csv or tsv"},
	{settings.KeyNoColor, "Disable colour: true or false"},
	{settings.KeyVerbose, "Log `level` as a count of -v: 0 warn, 1 info, 2 debug"},
	{settings.KeyDescription, "A line saying what the context is for"},
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewCmdSet returns `mirrorctl context set`.
func NewCmdSet(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f)
	cmd := &cobra.Command{
		Use:   "set <name> [--config <file>] [--source <alias>] [--target <alias>] [flags]",
		Short: "Create a context or change its values",
		Long: "Create the named context, or change the values given (the others are\n" +
			"kept); --unset removes a key. Values are checked before anything is\n" +
			"written: output, no-color and verbose as their variables are, and source\n" +
			"and target against the context's mm2.properties when it can be read. The\n" +
			"first context created becomes current; --use makes this one current.\n\n" +
			"The flags here set the context's values: --config, --output, --no-color,\n" +
			"--verbose and --audit-log do not act on this command itself.",
		Example: "$ mirrorctl context set prod --config ./prod.properties --source us-east --target eu-west\n" +
			"$ mirrorctl context set prod --output json --use\n" +
			"$ mirrorctl context set prod --unset target",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeNames(opts),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if !namePattern.MatchString(opts.Name) {
				return cmdutil.FlagErrorf("invalid context name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit", opts.Name)
			}
			for _, k := range opts.Unset {
				if !slices.Contains(settings.ContextKeys, k) || k == settings.KeyName {
					return cmdutil.FlagErrorf("--unset %q: not a context key (keys: %s)", k, strings.Join(settings.ContextKeys[1:], ", "))
				}
				if cmd.Flags().Changed(k) {
					return cmdutil.FlagErrorf("--%s and --unset %s contradict each other", k, k)
				}
			}
			vals := map[string]string{}
			for _, sf := range setFlags {
				if cmd.Flags().Changed(sf.key) {
					vals[sf.key] = opts.Values[sf.key]
				}
			}
			opts.Values = vals
			return run(cmd, opts, runF, runSet)
		},
	}
	fs := cmd.Flags()
	for _, sf := range setFlags {
		v := new(string)
		fs.StringVar(v, sf.key, "", sf.usage)
		key := sf.key
		fs.Lookup(key).Value = &storeValue{p: v, key: key, into: opts}
	}
	fs.Lookup(settings.KeyNoColor).NoOptDefVal = "true"
	fs.StringArrayVar(&opts.Unset, "unset", nil, "Remove this `key` from the context (repeatable)")
	fs.BoolVar(&opts.Use, "use", false, "Make the context current")
	_ = cmd.MarkFlagFilename(settings.KeyConfig, "properties")
	_ = cmd.MarkFlagFilename(settings.KeyAuditLog, "jsonl")
	_ = cmd.RegisterFlagCompletionFunc(settings.KeyOutput, cobra.FixedCompletions(output.Formats(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// storeValue is a string flag that records its value in Options.Values.
type storeValue struct {
	p    *string
	key  string
	into *Options
}

func (s *storeValue) Set(v string) error {
	*s.p = v
	s.into.Values[s.key] = v
	return nil
}
func (s *storeValue) String() string { return *s.p }
func (s *storeValue) Type() string   { return "string" }

func runSet(_ context.Context, opts *Options) error {
	sf, err := opts.Settings()
	if err != nil {
		return err
	}
	c, exists := sf.Context(opts.Name)
	if !exists {
		c = &settings.Context{Name: opts.Name, Lines: map[string]int{}}
	}
	next := *c
	for _, k := range settings.ContextKeys {
		v, ok := opts.Values[k]
		if !ok {
			continue
		}
		canon, err := settings.Validate(k, v)
		if err != nil {
			return cmdutil.FlagErrorf("--%s %q: %s", k, v, err)
		}
		if (k == settings.KeyConfig || k == settings.KeyAuditLog) && canon != "" {
			if canon, err = filepath.Abs(canon); err != nil {
				return fmt.Errorf("--%s: %w", k, err)
			}
		}
		_ = next.Set(k, canon)
	}
	for _, k := range opts.Unset {
		_ = next.Set(k, "")
	}
	if err := checkAliases(opts, &next); err != nil {
		return err
	}
	if exists {
		*c = next
	} else {
		sf.Contexts = append(sf.Contexts, &next)
	}
	made := ""
	if opts.Use || sf.Current == "" {
		sf.Current = opts.Name
		made = "; it is the current context"
	}
	if err := sf.Save(); err != nil {
		return err
	}
	verb := "updated"
	if !exists {
		verb = "created"
	}
	cmdutil.Successf(opts.IO, "%s context %s in %s%s", verb, opts.Name, settings.DisplayPath(sf.Path), made)
	return nil
}

// checkAliases refuses a source or target the context's mm2.properties
// does not define (exit 2, naming the context and alias). A config that
// cannot be read is not a reason to refuse: it is said, and the aliases go
// unchecked.
func checkAliases(opts *Options, c *settings.Context) error {
	if c.Config == "" || (c.Source == "" && c.Target == "") {
		return nil
	}
	cfg, err := opts.LoadConfig(c.Config)
	if err != nil || cfg == nil {
		cmdutil.Warnf(opts.IO, "context %s: source and target not checked: %s does not load", c.Name, settings.DisplayPath(c.Config))
		return nil
	}
	for _, a := range []struct{ key, alias string }{{settings.KeySource, c.Source}, {settings.KeyTarget, c.Target}} {
		if a.alias == "" {
			continue
		}
		if _, ok := cfg.Cluster(a.alias); !ok {
			return cmdutil.FlagErrorf("context %s: %s %q is not a cluster of %s (clusters: %s)", c.Name, a.key, a.alias,
				settings.DisplayPath(c.Config), strings.Join(cfg.Clusters, ", "))
		}
	}
	if c.Source != "" && c.Source == c.Target {
		return cmdutil.FlagErrorf("context %s: source and target are both %q", c.Name, c.Source)
	}
	return nil
}
