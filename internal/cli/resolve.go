package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/internal/settings"
)

// resolveGlobals resolves mirrorctl's own settings before run's RunE: the
// global flags (config, output, no-color, verbose, audit-log) and run's
// --source/--target, each flag > MIRRORCTL_* variable > current context >
// default. viper does the layering: the root's flags and run's flow flags
// are bound with BindPFlag, the variables with BindEnv, and the current
// context's values are viper's config layer (MergeConfigMap). Every value,
// whichever layer gave it, is then checked once by settings.Validate, so a
// bad variable and a bad context value fail alike (exit 2), naming the
// variable, or the settings file, line and context. It then configures
// colour and the log level and records the values with their origins for
// `config show` (g.resolved).
func resolveGlobals(root, run *cobra.Command, f *cmdutil.Factory, g *globalOptions) error {
	sf, err := f.Settings()
	if err != nil {
		return err
	}
	ctx, err := chooseContext(root, sf, g)
	if err == nil {
		err = resolveWith(root, run, f, g, ctx, sf.Path)
	}
	if err != nil && run.Annotations[cmdutil.AnnotationEditsSettings] != "" {
		// The context commands are how a bad context is mended: they
		// run without it, and say why.
		if err2 := resolveWith(root, run, f, g, nil, sf.Path); err2 == nil {
			cmdutil.Warnf(f.IO, "%s; running without a context", err)
			return nil
		}
	}
	return err
}

// resolveWith resolves the globals and run's flow flags with ctx (nil for
// none) as the context layer, read from the settings file at file.
func resolveWith(root, run *cobra.Command, f *cmdutil.Factory, g *globalOptions, ctx *settings.Context, file string) error {
	v := viper.New()
	if ctx != nil {
		m := map[string]any{}
		for _, k := range settings.ContextKeys {
			if val := ctx.Get(k); val != "" && k != settings.KeyName && k != settings.KeyDescription {
				m[k] = val
			}
		}
		if err := v.MergeConfigMap(m); err != nil {
			return fmt.Errorf("context %s: %w", ctx.Name, err)
		}
	}
	vals := map[string]string{}
	g.resolved = nil
	for _, b := range globalBindings {
		r, err := resolveValue(v, b.key, b.env, root.PersistentFlags().Lookup(b.flag), ctx, file)
		if err != nil {
			return err
		}
		vals[b.key] = r.Value
		g.resolved = append(g.resolved, r)
	}
	if err := applyGlobals(f, g, vals); err != nil {
		return err
	}
	return resolveFlow(run, f, g, v, ctx, file)
}

// chooseContext returns the context named by --context, else by
// $MIRRORCTL_CONTEXT, else the settings file's current-context; nil when
// none is named. A name the file does not define is a usage error naming
// it and where it came from.
func chooseContext(root *cobra.Command, sf *settings.File, g *globalOptions) (*settings.Context, error) {
	name, origin := "", ""
	if root.PersistentFlags().Changed("context") {
		name, origin = g.contextName, "--context"
	} else if e := os.Getenv(envContext); e != "" {
		name, origin = e, envContext
	}
	c, err := sf.CurrentContext(name, origin)
	var se *settings.Error
	if err != nil && !errors.As(err, &se) {
		return nil, cmdutil.FlagErrorWrap(err)
	}
	return c, err
}

// resolveValue returns key's value and origin. fl is the flag that sets it
// (nil when the command has none), env its variable, ctx the current
// context (nil for none) read from file. viper gives the value of the
// winning layer; its origin is the first of: fl set on the command line,
// env set and not empty, the context holding key, the default. A context's
// relative path (config, audit-log) is taken from the settings file's
// directory.
func resolveValue(v *viper.Viper, key, env string, fl *pflag.Flag, ctx *settings.Context, file string) (cmdutil.Resolved, error) {
	if fl != nil {
		if err := v.BindPFlag(key, fl); err != nil {
			return cmdutil.Resolved{}, fmt.Errorf("binding --%s: %w", fl.Name, err)
		}
	}
	if err := v.BindEnv(key, env); err != nil {
		return cmdutil.Resolved{}, fmt.Errorf("binding %s: %w", env, err)
	}
	r := cmdutil.Resolved{Key: key, Origin: cmdutil.OriginDefault}
	switch {
	case fl != nil && fl.Changed:
		r.Origin, r.Name = cmdutil.OriginFlag, "--"+fl.Name
	case os.Getenv(env) != "":
		r.Origin, r.Name = cmdutil.OriginEnv, env
	case ctx != nil && v.InConfig(key):
		r.Origin, r.Name, r.File, r.Line = cmdutil.OriginContext, ctx.Name, file, ctx.Line(key)
	}
	raw := ""
	if x := v.Get(key); x != nil {
		raw = fmt.Sprint(x)
	}
	val, err := settings.Validate(key, raw)
	if err != nil && !(r.Origin == cmdutil.OriginDefault && raw == "") {
		switch r.Origin {
		case cmdutil.OriginEnv:
			return r, cmdutil.FlagErrorf("invalid %s %q: %s", env, raw, err)
		case cmdutil.OriginContext:
			return r, &settings.Error{File: file, Line: r.Line, Key: key, Msg: fmt.Sprintf("invalid value %q in context %s: %s", raw, ctx.Name, err)}
		default:
			return r, cmdutil.FlagErrorf("invalid --%s %q: %s", key, raw, err)
		}
	}
	if r.Origin == cmdutil.OriginContext && (key == settings.KeyConfig || key == settings.KeyAuditLog) && !filepath.IsAbs(val) {
		val = filepath.Join(filepath.Dir(file), val)
	}
	r.Value = val
	return r, nil
}

// applyGlobals sets g from the resolved values (defaults filled in), then
// colour and the log level.
func applyGlobals(f *cmdutil.Factory, g *globalOptions, vals map[string]string) error {
	g.configPath = vals[settings.KeyConfig]
	if g.configPath == "" {
		g.configPath = defaultConfigFile
	}
	format, err := output.ParseFormat(vals[settings.KeyOutput])
	if err != nil {
		return cmdutil.FlagErrorWrap(err)
	}
	g.format, g.output = format, string(format)
	g.noColor = vals[settings.KeyNoColor] == "true"
	g.verbose, _ = strconv.Atoi(vals[settings.KeyVerbose]) // checked by settings.Validate
	g.auditLog = vals[settings.KeyAuditLog]
	if g.auditLog == "" {
		g.auditLog = audit.DefaultPath()
	}
	for i := range g.resolved {
		r := &g.resolved[i]
		switch r.Key {
		case settings.KeyConfig:
			r.Value = g.configPath
		case settings.KeyAuditLog:
			r.Value = g.auditLog
		case settings.KeyOutput:
			r.Value = g.output
		}
		r.Value = settings.DisplayPath(r.Value)
	}

	f.IO.SetWideTables(g.wide)
	if g.noColor || os.Getenv("NO_COLOR") != "" {
		f.IO.SetColorDisabled(true)
	}
	if s, ok := f.Logger.Handler().(levelSetter); ok {
		s.SetLevel(verbosityLevel(g.verbose))
	}
	return nil
}

// resolveFlow gives run's --source and --target, when not set on the
// command line, the value of MIRRORCTL_SOURCE/MIRRORCTL_TARGET or of the
// context (the flag's Value is set, not marked Changed). An alias the
// mm2.properties does not define is an error naming the context (file,
// line) or the variable, and the alias. `failover apply --from-plan` takes
// its flow from the plan: no default is given there. The values are
// recorded in g.resolved whether run has the flags or not; a command marked
// cmdutil.AnnotationChecksFlowDefaults (config validate, config show) checks
// the aliases too.
func resolveFlow(run *cobra.Command, f *cmdutil.Factory, g *globalOptions, v *viper.Viper, ctx *settings.Context, file string) error {
	fromPlan := run.Flags().Changed("from-plan")
	for _, b := range flowBindings {
		fl := run.Flags().Lookup(b.flag)
		r, err := resolveValue(v, b.key, b.env, fl, ctx, file)
		if err != nil {
			return err
		}
		g.resolved = append(g.resolved, r)
		checks := run.Annotations[cmdutil.AnnotationChecksFlowDefaults] != ""
		if r.Value == "" || fromPlan || fl != nil && fl.Changed || fl == nil && !checks {
			continue
		}
		if err := checkAlias(f, r, b.env); err != nil {
			return err
		}
		if fl == nil {
			continue
		}
		if err := fl.Value.Set(r.Value); err != nil {
			return cmdutil.FlagErrorf("%s: --%s %q: %s", r.Describe(), b.flag, r.Value, err)
		}
	}
	return nil
}

// checkAlias returns an error when the mm2.properties (f.Config) does not
// define r's alias, naming where the alias came from. A config that does
// not load is left for the command to report.
func checkAlias(f *cmdutil.Factory, r cmdutil.Resolved, env string) error {
	cfg, err := f.Config()
	if err != nil || cfg == nil {
		return nil
	}
	if _, ok := cfg.Cluster(r.Value); ok {
		return nil
	}
	msg := fmt.Sprintf("%s %q is not a cluster of %s (clusters: %s)", r.Key, r.Value, settings.DisplayPath(cfg.File), strings.Join(cfg.Clusters, ", "))
	if r.Origin == cmdutil.OriginContext {
		return &settings.Error{File: r.File, Line: r.Line, Key: r.Key, Msg: "context " + r.Name + ": " + msg}
	}
	return cmdutil.FlagErrorf("%s: %s", env, msg)
}
