// Package show implements `mirrorctl config show`.
package show

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
)

// ShowOptions are the dependencies and flags of `mirrorctl config show`.
type ShowOptions struct {
	IO         *iostreams.IOStreams
	Output     func() output.Format
	ConfigPath func() string
	Config     func() (*config.Config, error)
	// Resolved returns mirrorctl's own settings with their origins
	// (cmdutil.Factory.Resolved); nil shows none.
	Resolved func() []cmdutil.Resolved

	// Flow is the --flow value, "source->target", or "" for every enabled
	// flow.
	Flow string
	// Source and Target are Flow split on "->".
	Source, Target string
}

// Result is the JSON document of `config show -o json`.
type Result struct {
	output.Envelope
	// File is the mm2.properties path that was read (credentials before
	// '@' masked).
	File string `json:"file"`
	// Resolved are mirrorctl's own settings in force (config, output,
	// no-color, verbose, audit-log, and the default source and target of
	// the flow commands), in that order, each with its origin: flag, env
	// (a MIRRORCTL_* variable), context (with the settings file and line)
	// or default.
	Resolved []cmdutil.Resolved `json:"resolved"`
	// Flows are the flows shown, sorted by (source, target).
	Flows []Flow `json:"flows"`
}

// Flow is one flow's effective settings.
type Flow struct {
	// Name is "source->target".
	Name    string `json:"name"`
	Source  string `json:"source"`
	Target  string `json:"target"`
	Enabled bool   `json:"enabled"`
	// Settings are the flow's connector and worker settings (MM2 precedence:
	// default < top-level < source->target.*), sorted by key.
	Settings []Setting `json:"settings"`
	// SourceClient are the source cluster's client properties for the
	// consumer role, sorted by key.
	SourceClient []Setting `json:"source_client"`
	// TargetClient are the target cluster's client properties for the
	// producer role, sorted by key.
	TargetClient []Setting `json:"target_client"`
	// Delivery is what `replicate` guarantees for the flow:
	// "exactly-once" (<target>.exactly.once.source.support = enabled) or
	// "at-least-once"; SourceIsolation how it reads the source,
	// "read_committed" (default) or "read_uncommitted"
	// (<source>.consumer.isolation.level).
	Delivery        string `json:"delivery"`
	SourceIsolation string `json:"source_isolation"`
}

// Setting is one effective key. Value is masked ("**redacted**") for
// sensitive keys and shows ${provider:...} references as written.
type Setting struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Origin string `json:"origin"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
}

// NewCmdShow returns `mirrorctl config show`. If runF is non-nil it is
// called with the parsed options instead of runShow (tests).
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{IO: f.IO, Output: f.Output, ConfigPath: f.ConfigPath, Config: f.Config, Resolved: f.Resolved}
	cmd := &cobra.Command{
		Use:   "show [--flow <source>-><target>]",
		Short: "Show the effective settings of each enabled flow",
		Long: "Show, for each enabled flow (or the one named by --flow), every effective\n" +
			"setting with its origin (default, top-level, cluster or flow) and the\n" +
			"file:line it was set on, followed by the client properties of the source\n" +
			"cluster (consumer role) and of the target cluster (producer role). Two\n" +
			"engine rows come first: the delivery guarantee (exactly-once or\n" +
			"at-least-once) and how the source is read (read_committed or\n" +
			"read_uncommitted). Before them, mirrorctl's own settings (config, output,\n" +
			"no-color, verbose, audit-log, and the default source and target of the\n" +
			"flow commands) with where each came from: a flag, a MIRRORCTL_* variable,\n" +
			"the current context (settings file and line) or the default.\n\n" +
			"Secret values (passwords, JAAS configs, keys) are always shown as\n" +
			"**redacted**; values from config providers are shown as their ${...}\n" +
			"reference. Nothing is sent to any cluster.",
		Example: "$ mirrorctl config show\n" +
			"$ mirrorctl config show --flow 'us-east->eu-west' -o json\n" +
			"$ mirrorctl config show -o csv > settings.csv",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Flow != "" {
				src, tgt, ok := strings.Cut(opts.Flow, "->")
				if !ok || src == "" || tgt == "" || strings.Contains(tgt, "->") {
					return cmdutil.FlagErrorf("invalid --flow %q: want <source>-><target>, e.g. us-east->eu-west", opts.Flow)
				}
				opts.Source, opts.Target = strings.TrimSpace(src), strings.TrimSpace(tgt)
			}
			if runF != nil {
				return runF(opts)
			}
			return runShow(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Flow, "flow", "", "Show only this flow, `source->target`")
	_ = cmd.RegisterFlagCompletionFunc("flow", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		cfg, _ := opts.Config()
		if cfg == nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, fl := range cfg.Flows {
			names = append(names, fl.Name())
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func runShow(_ context.Context, opts *ShowOptions) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.SummarizeWarnings(opts.IO, cfg)
	}
	if err != nil {
		return err
	}
	flows := cfg.EnabledFlows()
	if opts.Flow != "" {
		fl, ok := cfg.Flow(opts.Source, opts.Target)
		if !ok {
			return cmdutil.FlagErrorf("flow %s->%s is not in %s (clusters: %s)", opts.Source, opts.Target,
				opts.ConfigPath(), strings.Join(cfg.Clusters, ", "))
		}
		flows = []*config.Flow{fl}
	}

	res := Result{Envelope: output.NewEnvelope(), File: settings.DisplayPath(opts.ConfigPath()), Resolved: []cmdutil.Resolved{}, Flows: []Flow{}}
	if opts.Resolved != nil {
		res.Resolved = append(res.Resolved, opts.Resolved()...)
	}
	for _, fl := range flows {
		r := Flow{
			Name: fl.Name(), Source: fl.Source, Target: fl.Target, Enabled: fl.Enabled,
			Settings:     convert(fl.Settings()),
			SourceClient: []Setting{},
			TargetClient: []Setting{},
		}
		fc := cmdutil.FlowConfig(cfg, fl)
		r.Delivery, r.SourceIsolation = fc.Delivery(), fc.SourceIsolation()
		if cl, ok := cfg.Cluster(fl.Source); ok {
			r.SourceClient = convert(cl.ClientSettings(config.RoleConsumer))
		}
		if cl, ok := cfg.Cluster(fl.Target); ok {
			r.TargetClient = convert(cl.ClientSettings(config.RoleProducer))
		}
		res.Flows = append(res.Flows, r)
	}

	switch f := opts.Output(); f {
	case output.FormatJSON:
		return output.WriteJSON(opts.IO.Out, res)
	case output.FormatTable:
		if len(res.Resolved) > 0 && (opts.IO.IsStdoutTTY() || opts.IO.WideTables()) {
			// Aligned for people: mirrorctl's own settings as a table of
			// their own, so the flows' table keeps its hoisted flow.
			if err := resolvedTable(res.Resolved).Render(opts.IO, f); err != nil {
				return err
			}
			if _, err := fmt.Fprintln(opts.IO.Out); err != nil {
				return err
			}
			res.Resolved = nil
		}
		return table(res).Render(opts.IO, f)
	default:
		return table(res).Render(opts.IO, f)
	}
}

// resolvedTable lays mirrorctl's own settings out on their own, for an
// aligned table: setting, value, origin and file:line ([resolvedRow]).
func resolvedTable(rs []cmdutil.Resolved) *output.Table {
	t := output.NewTable("setting", "value", "origin", "file:line")
	for _, r := range rs {
		t.AddRow(resolvedRow(r)...)
	}
	return t
}

// resolvedRow is r's key, value, origin ("flag --x", "env MIRRORCTL_X",
// "context NAME" or "default") and file:line (the settings file's, for a
// context) cells.
func resolvedRow(r cmdutil.Resolved) []string {
	origin := r.Origin
	if r.Name != "" {
		origin += " " + r.Name
	}
	loc := ""
	if r.File != "" {
		loc = settings.DisplayPath(r.File)
		if r.Line > 0 {
			loc += ":" + strconv.Itoa(r.Line)
		}
	}
	return []string{r.Key, r.Value, origin, loc}
}

// convert copies settings for output, masking every sensitive key again
// (config already does; this is a second line of defence for secrets).
func convert(in []config.Setting) []Setting {
	out := make([]Setting, 0, len(in))
	for _, s := range in {
		out = append(out, Setting{
			Key:    s.Key,
			Value:  config.Display(s.Key, s.Value),
			Origin: s.Origin,
			File:   settings.DisplayPath(s.File),
			Line:   s.Line,
		})
	}
	return out
}

// table lays res out one row per setting: first mirrorctl's own (flow "",
// scope "mirrorctl", origin "flag --x", "env MIRRORCTL_X", "context NAME" or
// "default", file:line in the settings file for a context), then flow, scope ("flow", or
// "<alias> consumer"/"<alias> producer" for client properties), key, value,
// origin and file:line ("" for defaults).
func table(res Result) *output.Table {
	t := output.NewTable("flow", "scope", "key", "value", "origin", "file:line")
	add := func(flow, scope string, ss []Setting) {
		for _, s := range ss {
			loc := ""
			if s.File != "" {
				loc = s.File
				if s.Line > 0 {
					loc += ":" + strconv.Itoa(s.Line)
				}
			}
			t.AddRow(flow, scope, s.Key, s.Value, s.Origin, loc)
		}
	}
	for _, r := range res.Resolved {
		t.AddRow(append([]string{"", "mirrorctl"}, resolvedRow(r)...)...)
	}
	for _, fl := range res.Flows {
		t.AddRow(fl.Name, "engine", "delivery", fl.Delivery, "derived", "")
		t.AddRow(fl.Name, "engine", "source isolation", fl.SourceIsolation, "derived", "")
		add(fl.Name, "flow", fl.Settings)
		add(fl.Name, fmt.Sprintf("%s consumer", fl.Source), fl.SourceClient)
		add(fl.Name, fmt.Sprintf("%s producer", fl.Target), fl.TargetClient)
	}
	return t
}
