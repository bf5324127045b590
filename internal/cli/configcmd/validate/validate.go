// Package validate implements `mirrorctl config validate`.
package validate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// ValidateOptions are the dependencies of `mirrorctl config validate`.
type ValidateOptions struct {
	IO         *iostreams.IOStreams
	Output     func() output.Format
	ConfigPath func() string
	Config     func() (*config.Config, error)
	// Clients reaches the clusters; used only with Connect.
	Clients func() (replicate.Clients, error)
	// Connect is --connect: also ask every cluster with bootstrap servers
	// for its cluster ID and plan the enabled flows (read-only), so aliases
	// of one cluster and flows that would write one remote topic are errors
	// here as they are at `replicate` start.
	Connect bool
	// Strict is --strict: any warning fails the check as an error would
	// (exit 2), for CI gates that want a file with no remark at all.
	Strict bool
}

// Result is the JSON document `config validate -o json` writes to stdout
// when the file is valid. (An invalid file exits 2 with the error object
// on stderr.)
type Result struct {
	output.Envelope
	// File is the path that was read.
	File string `json:"file"`
	// Valid is always true in a written Result.
	Valid bool `json:"valid"`
	// Clusters is the number of aliases in `clusters`.
	Clusters int `json:"clusters"`
	// EnabledFlows names the enabled flows, "source->target", sorted.
	EnabledFlows []string `json:"enabled_flows"`
	// Warnings are the non-fatal remarks, "file:line: key: msg", by line
	// (the same as the warning entries of Problems).
	Warnings []string `json:"warnings"`
	// Problems lists every error and warning as fields: the file's errors
	// first (then Valid is false and the command exits 2), then its
	// warnings, client keys that will not be applied and secrets written
	// literally, each group by line.
	Problems []Problem `json:"problems"`
}

// Problem is one finding of `config validate`. It never holds a value.
type Problem struct {
	// Severity is "error" (the file is invalid), "warning", "note" (an
	// MM2 key acted on with a meaning that differs here) or "acknowledged"
	// (a warning of a key listed in mirrorctl.warnings.acknowledged); notes
	// and acknowledged warnings never fail the check, not even --strict.
	Severity string `json:"severity"`
	File     string `json:"file"`
	// Line is 1-based; 0 when the problem has no line (a missing key).
	Line int `json:"line"`
	// Key is the key as written, prefixes included; "" for file-wide
	// problems.
	Key     string `json:"key"`
	Message string `json:"message"`
}

// NewCmdValidate returns `mirrorctl config validate`. If runF is non-nil it
// is called with the options instead of runValidate (tests).
func NewCmdValidate(f *cmdutil.Factory, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: f.IO, Output: f.Output, ConfigPath: f.ConfigPath, Config: f.Config,
		Clients: func() (replicate.Clients, error) { return f.Kafka() }}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check mm2.properties for errors",
		Long: "Parse mm2.properties as MirrorMaker 2 would and report every problem with its\n" +
			"file:line and key. Warnings (unknown or misspelt keys, ignored or deprecated\n" +
			"settings, duplicates, MM2 keys accepted but not acted on, client properties\n" +
			"the Kafka client will not apply, secrets written literally instead of as\n" +
			"${env:VAR} or ${file:/path:key}) go to stderr and do not fail the check.\n" +
			"With -o json, stdout gets every problem as {severity, file, line, key,\n" +
			"message}, also when the file is invalid (valid: false, exit 2). Nothing is\n" +
			"sent to any cluster, unless --connect: then each cluster is asked for its\n" +
			"cluster ID (two aliases of one cluster are an error, naming both) and the\n" +
			"enabled flows are planned, read-only (flows into one target that would write\n" +
			"the same remote topic are an error); a cluster that does not answer is a\n" +
			"warning. Secret values never appear in the report. A key one or two letters\n" +
			"from a known one (topcs, bootstrap.server) is an error, not a warning: the key\n" +
			"it was meant to be would keep its default. --strict fails on any warning.\n" +
			"Notes name the MM2 keys set in the file that mirrorctl reads differently\n" +
			"(tasks.max counts processes, not tasks, ...); they never fail the check.\n" +
			"Other commands print one line pointing here instead of every warning\n" +
			"(replicate prints them all at start). A warning read and accepted can be\n" +
			"acknowledged: list its key in mirrorctl.warnings.acknowledged.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  the file is valid (it may have warnings, unless --strict)\n" +
			"  1  the file could not be checked\n" +
			"  2  the file has errors (or, with --strict, warnings); each is listed on stderr",
		Example: "$ mirrorctl config validate -c mm2.properties\n$ MIRRORCTL_CONFIG=dr.properties mirrorctl config validate -o json\n$ mirrorctl config validate --strict   # CI: no warning allowed",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(opts)
			}
			return runValidate(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Connect, "connect", false, "Also connect: refuse aliases of one cluster (same cluster ID) and flows writing one remote topic")
	cmd.Flags().BoolVar(&opts.Strict, "strict", false, "Fail (exit 2) on any warning, as on an error")
	return cmd
}

func runValidate(ctx context.Context, opts *ValidateOptions) error {
	cfg, err := opts.Config()
	var connectWarnings []config.Warning
	if err == nil && opts.Connect {
		var errs []error
		errs, connectWarnings = checkClusters(ctx, opts, cfg)
		if len(errs) > 0 {
			err = errors.Join(errs...)
		}
	}
	res := Result{
		Envelope:     output.NewEnvelope(),
		File:         opts.ConfigPath(),
		Valid:        err == nil,
		EnabledFlows: []string{},
		Warnings:     []string{},
		Problems:     []Problem{},
	}
	if err != nil {
		var cerrs []*config.Error
		collectErrors(err, &cerrs)
		if len(cerrs) == 0 || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return err // not a finding in the file: it cannot be read
		}
		for _, e := range cerrs {
			res.Problems = append(res.Problems, Problem{Severity: "error", File: e.File, Line: e.Line, Key: e.Key, Message: e.Msg})
		}
	}
	var warnings []config.Warning
	if cfg != nil {
		warnings = append(warnings, cfg.Warnings...)
		warnings = append(warnings, connectWarnings...)
		if err == nil {
			warnings = append(warnings, clientKeyWarnings(cfg)...)
			warnings = append(warnings, cfg.LiteralSecrets()...)
			sort.SliceStable(warnings, func(i, j int) bool { return warnings[i].Line < warnings[j].Line })
		}
	}
	for _, w := range warnings {
		res.Warnings = append(res.Warnings, w.String())
		res.Problems = append(res.Problems, Problem{Severity: "warning", File: w.File, Line: w.Line, Key: w.Key, Message: w.Msg})
	}
	cmdutil.PrintWarnings(opts.IO, warnings)
	if cfg != nil {
		for _, a := range cfg.Acknowledged {
			res.Problems = append(res.Problems, Problem{Severity: "acknowledged", File: a.File, Line: a.Line, Key: a.Key, Message: a.Msg})
		}
		if n := len(cfg.Acknowledged); n > 0 {
			cmdutil.Notef(opts.IO, "%s acknowledged in %s (not printed; -o json lists them)", plural(n, "warning"), config.KeyAcknowledged)
		}
		for _, n := range cfg.Notes {
			res.Problems = append(res.Problems, Problem{Severity: "note", File: n.File, Line: n.Line, Key: n.Key, Message: n.Msg})
		}
		cmdutil.PrintNotes(opts.IO, cfg.Notes)
	}
	if err == nil && opts.Strict && len(warnings) > 0 {
		err = &config.Error{File: res.File, Msg: fmt.Sprintf("%s and --strict: the file is not accepted until each is resolved", plural(len(warnings), "warning"))}
		res.Valid = false
	}
	if opts.Output() == output.FormatJSON {
		if cfg != nil && err == nil {
			res.Clusters = len(cfg.Clusters)
			for _, fl := range cfg.EnabledFlows() {
				res.EnabledFlows = append(res.EnabledFlows, fl.Name())
			}
		}
		if werr := output.WriteJSON(opts.IO.Out, res); werr != nil {
			return werr
		}
		return err
	}
	if err != nil {
		return err
	}
	res.Clusters = len(cfg.Clusters)
	for _, fl := range cfg.EnabledFlows() {
		res.EnabledFlows = append(res.EnabledFlows, fl.Name())
	}
	if opts.IO.IsStderrTTY() {
		cmdutil.Successf(opts.IO, "%s is valid: %s, %s", res.File,
			plural(res.Clusters, "cluster"), plural(len(res.EnabledFlows), "enabled flow"))
	}
	return nil
}

// collectErrors appends every *config.Error in err's tree (errors.Join).
func collectErrors(err error, out *[]*config.Error) {
	var ce *config.Error
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			collectErrors(x, out)
		}
	default:
		if errors.As(err, &ce) {
			*out = append(*out, ce)
		}
	}
}

// clientKeyWarnings maps each cluster's client properties, per role, as the
// client factory will (kafka.Options), and returns a warning at the key's
// file:line for every property that will not be applied, once per key.
func clientKeyWarnings(cfg *config.Config) []config.Warning {
	var out []config.Warning
	seen := map[string]bool{}
	var lines []string
	if b, err := os.ReadFile(cfg.File); err == nil {
		lines = strings.Split(string(b), "\n")
	}
	for _, alias := range cfg.Clusters {
		cl, ok := cfg.Cluster(alias)
		if !ok {
			continue
		}
		for _, role := range []config.Role{config.RoleConsumer, config.RoleProducer, config.RoleAdmin} {
			_, ws, err := kafka.Options(alias, cl.ClientProps(role))
			if err != nil {
				continue // a value error is reported when the client is built
			}
			where := map[string]config.Setting{}
			for _, st := range cl.ClientSettings(role) {
				where[st.Key] = st
			}
			for _, w := range ws {
				key, why, _ := strings.Cut(w, ": ")
				st := where[key]
				written := key
				if k := keyAt(lines, st.Line); k != "" {
					written = k
				}
				id := fmt.Sprint(st.File, st.Line, written)
				if seen[id] {
					continue
				}
				seen[id] = true
				out = append(out, config.Warning{File: st.File, Line: st.Line, Key: written,
					Msg: fmt.Sprintf("client property will not be applied to the %s client: %s", role, why)})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// keyAt returns the key written at line (1-based) of file, read as a
// properties line ("key = value", "key: value" or "key value"), or "" when
// the line cannot be read. Only the key is returned: values may be secrets.
func keyAt(lines []string, line int) string {
	if line < 1 || line > len(lines) {
		return ""
	}
	l := strings.TrimSpace(lines[line-1])
	if i := strings.IndexAny(l, "=: \t"); i >= 0 {
		l = l[:i]
	}
	return l
}

func plural(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// checkClusters is --connect: the cluster ID of every alias with bootstrap
// servers (replicate.ClusterIDs), aliases sharing one as errors at the
// `clusters` line, then, when those are distinct, the remote-topic
// conflicts of the enabled flows (replicate.CheckIdentities). An alias that
// does not answer, or flows that cannot be planned, are warnings.
func checkClusters(ctx context.Context, opts *ValidateOptions, cfg *config.Config) (errs []error, warnings []config.Warning) {
	clients, err := opts.Clients()
	if err != nil {
		return []error{err}, nil
	}
	var aliases []string
	clustersLine := 0
	for _, alias := range cfg.Clusters {
		cl, ok := cfg.Cluster(alias)
		if !ok {
			continue
		}
		clustersLine = cl.Line
		if len(cl.BootstrapServers()) > 0 {
			aliases = append(aliases, alias)
		}
	}
	ids, failed := replicate.ClusterIDs(ctx, clients, aliases)
	for _, alias := range aliases {
		if e, ok := failed[alias]; ok {
			warnings = append(warnings, config.Warning{File: cfg.File, Line: clustersLine, Key: alias + ".bootstrap.servers",
				Msg: fmt.Sprintf("--connect: cluster %s not checked: %v", alias, e)})
		}
	}
	for _, e := range replicate.SameClusters(ids) {
		errs = append(errs, &config.Error{File: cfg.File, Line: clustersLine, Key: "clusters", Msg: e.Error(), Err: e})
	}
	if len(errs) > 0 {
		return errs, warnings
	}
	var flows []replicate.FlowConfig
	lines := map[string]int{}
	for _, fl := range cfg.EnabledFlows() {
		if _, ok := ids[fl.Source]; !ok {
			continue
		}
		if _, ok := ids[fl.Target]; !ok {
			continue
		}
		flows = append(flows, cmdutil.FlowConfig(cfg, fl))
		lines[fl.Name()] = fl.Line
	}
	for _, e := range unjoin(replicate.CheckIdentities(ctx, clients, flows)) {
		var ce *replicate.RemoteTopicConflictError
		if errors.As(e, &ce) {
			errs = append(errs, &config.Error{File: cfg.File, Line: lines[ce.Flows[0]], Key: ce.Flows[0] + ".enabled", Msg: ce.Error(), Err: ce})
		} else {
			warnings = append(warnings, config.Warning{File: cfg.File, Key: "clusters", Msg: fmt.Sprintf("--connect: flows not planned: %v", e)})
		}
	}
	return errs, warnings
}

// unjoin flattens an errors.Join tree one level.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
