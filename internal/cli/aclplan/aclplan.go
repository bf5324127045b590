// Package aclplan implements `mirrorctl acl-plan`: the least-privilege ACLs
// the mirror (and optionally a failover operator) needs, derived by the
// aclplan engine from mm2.properties, printed as kafka-acls.sh command
// lines, a table or JSON, compared with the clusters' ACLs (--diff) or
// created (--apply, audited).
package aclplan

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mirrorctl/mirrorctl/aclplan"
	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Formats of --format, besides the global -o formats.
const (
	FormatKafkaACLs = "kafka-acls"
	FormatTable     = "table"
	FormatJSON      = "json"
)

// Auditor records an acting command before it acts and its outcome after.
// It is the shape of package audit's (*Log).Begin, with the returned
// operation's End as a function, so the CLI can be wired to it with a
// two-line adapter.
type Auditor interface {
	Begin(ctx context.Context, command string, args []string, configDigest string, plan any) (end func(ctx context.Context, status string, result any, err error) error, err error)
}

// auditLog adapts *audit.Log to Auditor.
type auditLog struct{ l *audit.Log }

func (a auditLog) Begin(ctx context.Context, command string, args []string, digest string, plan any) (func(context.Context, string, any, error) error, error) {
	op, err := a.l.Begin(ctx, command, args, digest, plan)
	if err != nil {
		return nil, err
	}
	return op.End, nil
}

// ACLPlanOptions are the dependencies and flags of `mirrorctl acl-plan`.
type ACLPlanOptions struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	// Audit opens the audit log (cmdutil.Factory.Audit); nil makes --apply
	// refuse to run.
	Audit func() (Auditor, error)

	Principal string // --principal, e.g. User:mm2
	// FailoverPrincipal is --failover-principal, e.g. User:ops: the
	// operators, who run translate, lag, fence and the failover verbs.
	FailoverPrincipal string
	// NoFence is --no-fence: no CLUSTER ALTER on the source for the write
	// fence.
	NoFence bool
	Format  string // --format; "" follows -o
	Diff    bool
	Apply   bool
	Args    []string // the command line, for the audit entry
}

// NewCmdACLPlan returns `mirrorctl acl-plan`. If runF is non-nil it is
// called with the options instead of runACLPlan (tests).
func NewCmdACLPlan(f *cmdutil.Factory, runF func(*ACLPlanOptions) error) *cobra.Command {
	opts := &ACLPlanOptions{
		IO: f.IO, Output: f.Output, Config: f.Config,
		Clients: func() (replicate.Clients, error) { return f.Kafka() },
	}
	if f.Audit != nil {
		opts.Audit = func() (Auditor, error) {
			l, err := f.Audit()
			if err != nil {
				return nil, err
			}
			return auditLog{l}, nil
		}
	}
	cmd := &cobra.Command{
		Use:   "acl-plan --principal <type:name> [--failover-principal <type:name>] [--format kafka-acls|table|json] [--diff | --apply]",
		Short: "Print the least-privilege ACLs the mirror needs",
		Long: "Derive, from mm2.properties, every ACL binding the enabled features need on each\n" +
			"cluster, with the feature and Kafka API each one is for: READ on the source\n" +
			"topics, CREATE/WRITE/ALTER on the remote topics, the internal topics\n" +
			"(progress, offset-syncs, checkpoints, heartbeats), groups for checkpoints and\n" +
			"sync.group.offsets, and CLUSTER rights only for sync.topic.acls. With\n" +
			"--failover-principal, the operators' principal gets what translate (every mode),\n" +
			"lag, fence and the failover verbs (plan, apply, verify, drill; planned,\n" +
			"unplanned, restore) need: reads of the source topics and groups, the remote\n" +
			"topics and the internal topics, group commits on the target (and on the source\n" +
			"for a restore), the drill's shadow groups, and CLUSTER ALTER on the source for\n" +
			"the write fence's ACLs (--no-fence leaves that out).\n" +
			"Operations that another binding implies (READ implies DESCRIBE, ALTER_CONFIGS\n" +
			"implies DESCRIBE_CONFIGS) are folded into it.\n\n" +
			"A literal topic list gives LITERAL bindings, a prefix regex (orders\\..*) one\n" +
			"PREFIXED binding, any other regex LITERAL bindings for the topics it matches\n" +
			"now (re-run when new ones match); only `.*` gives the wildcard, with a warning.\n\n" +
			"--diff compares with the ACLs on each cluster (DescribeAcls): missing,\n" +
			"present and broader-than-needed grants. --apply creates the missing ones and\n" +
			"records it in the audit log. Both connect with the config's admin settings.\n\n" +
			"EXIT STATUS\n\n" +
			"  0    printed (or applied)\n" +
			"  1    a cluster could not be read or an ACL not created\n" +
			"  2    bad flags or an invalid mm2.properties\n" +
			"  3    --diff found missing bindings",
		Example: "$ mirrorctl acl-plan --principal User:mm2 --format kafka-acls > grant.sh\n" +
			"$ mirrorctl acl-plan --principal User:mm2 --failover-principal User:ops -o json\n" +
			"$ mirrorctl acl-plan --principal User:mm2 --diff",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.Principal == "" {
				return cmdutil.FlagErrorf("--principal is required, e.g. --principal User:mm2")
			}
			for _, f := range [][2]string{{"--principal", opts.Principal}, {"--failover-principal", opts.FailoverPrincipal}} {
				if f[1] != "" && !strings.Contains(f[1], ":") {
					return cmdutil.FlagErrorf("%s %q: want <type>:<name>, e.g. User:%s", f[0], f[1], f[1])
				}
			}
			if opts.FailoverPrincipal != "" && opts.FailoverPrincipal == opts.Principal {
				return cmdutil.FlagErrorf("--failover-principal is the same as --principal (%s): give the operators their own principal, or leave the flag out", opts.Principal)
			}
			if opts.Diff && opts.Apply {
				return cmdutil.FlagErrorf("--diff and --apply cannot be used together (--apply shows what it created)")
			}
			switch opts.Format {
			case "", FormatKafkaACLs, FormatTable, FormatJSON:
			default:
				return cmdutil.FlagErrorf("invalid --format %q: valid values are {kafka-acls|table|json}; for CSV or TSV use -o csv or -o tsv", opts.Format)
			}
			opts.Args = append([]string{"acl-plan"}, argsOf(cmd)...)
			if runF != nil {
				return runF(opts)
			}
			return runACLPlan(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Principal, "principal", "", "Principal that runs the mirror, e.g. `User:mm2`")
	cmd.Flags().StringVar(&opts.FailoverPrincipal, "failover-principal", "", "Operators' principal: runs translate, lag, fence and the failover verbs, e.g. `User:ops`")
	cmd.Flags().BoolVar(&opts.NoFence, "no-fence", false, "Leave the write fence's CLUSTER ALTER on the source out of the failover principal's bindings")
	cmd.Flags().StringVar(&opts.Format, "format", "", "Output: `kafka-acls` (kafka-acls.sh command lines), table or json; unset, the global -o decides (table, tsv, csv, json)")
	cmd.Flags().BoolVar(&opts.Diff, "diff", false, "Compare with the ACLs on each cluster")
	cmd.Flags().BoolVar(&opts.Apply, "apply", false, "Create the missing bindings (audited)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]string{FormatKafkaACLs, FormatTable, FormatJSON}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func argsOf(cmd *cobra.Command) []string {
	var out []string
	cmd.Flags().Visit(func(f *pflag.Flag) { out = append(out, "--"+f.Name+"="+f.Value.String()) })
	return out
}

// Flows returns the flows a mirror runs for cfg, as the planner needs them:
// every enabled flow, and every other pair with heartbeats on whose two
// clusters have bootstrap servers (replicate emits heartbeats for those).
func Flows(cfg *config.Config) []aclplan.Flow {
	var out []aclplan.Flow
	for _, f := range cfg.Flows {
		if !f.Enabled {
			if !f.Bool("emit.heartbeats.enabled") || !hasBootstrap(cfg, f.Source) || !hasBootstrap(cfg, f.Target) {
				continue
			}
		}
		out = append(out, aclplan.Flow{FlowConfig: cmdutil.FlowConfig(cfg, f), SyncTopicACLs: f.Bool("sync.topic.acls.enabled")})
	}
	return out
}

func hasBootstrap(cfg *config.Config, alias string) bool {
	cl, ok := cfg.Cluster(alias)
	return ok && len(cl.BootstrapServers()) > 0
}

// PlanResult is the JSON document of `acl-plan --format json`.
type PlanResult struct {
	output.Envelope
	Bindings []aclplan.Binding `json:"bindings"`
	Notes    []aclplan.Note    `json:"notes"`
}

// DiffResult is the JSON document of `acl-plan --diff --format json`.
type DiffResult struct {
	output.Envelope
	Diff  []aclplan.DiffEntry `json:"diff"`
	Notes []aclplan.Note      `json:"notes"`
}

// ApplyResult is the JSON document of `acl-plan --apply --format json`.
type ApplyResult struct {
	output.Envelope
	Created []aclplan.ApplyResult `json:"created"`
	Present int                   `json:"present"`
	Notes   []aclplan.Note        `json:"notes"`
}

func runACLPlan(ctx context.Context, opts *ACLPlanOptions) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.SummarizeWarnings(opts.IO, cfg)
	}
	if err != nil {
		return err
	}
	flows := Flows(cfg)
	enabled := 0
	for _, f := range flows {
		if f.Enabled {
			enabled++
		}
	}
	if enabled == 0 {
		return cmdutil.FlagErrorf("%s enables no flow: set <source>-><target>.enabled = true", cfg.File)
	}
	var clients replicate.Clients
	getClients := func() (replicate.Clients, error) {
		if clients == nil {
			c, err := opts.Clients()
			if err != nil {
				return nil, err
			}
			clients = c
		}
		return clients, nil
	}
	in := aclplan.Input{
		Principal: opts.Principal, FailoverPrincipal: opts.FailoverPrincipal, NoFence: opts.NoFence, Flows: flows,
		Topics: func(alias string) ([]string, error) {
			c, err := getClients()
			if err != nil {
				return nil, err
			}
			adm, err := c.Admin(alias)
			if err != nil {
				return nil, err
			}
			td, err := adm.ListTopics(ctx)
			if err != nil {
				return nil, err
			}
			return td.Names(), nil
		},
		Groups: func(alias string) ([]string, error) {
			c, err := getClients()
			if err != nil {
				return nil, err
			}
			adm, err := c.Admin(alias)
			if err != nil {
				return nil, err
			}
			gs, err := adm.ListGroups(ctx)
			if err != nil {
				return nil, err
			}
			return gs.Groups(), nil
		},
	}
	plan, err := aclplan.Build(in)
	if err != nil {
		// Not a usage error: listing a cluster (for a regex that is neither
		// a name nor a prefix) can fail like any other Kafka call (exit 1).
		return fmt.Errorf("%s: %w", cfg.File, err)
	}
	format := opts.Format
	if format == "" {
		format = string(opts.Output())
	}
	bootstrap := map[string]string{}
	for _, alias := range cfg.Clusters {
		if cl, ok := cfg.Cluster(alias); ok {
			bootstrap[alias] = joinComma(cl.BootstrapServers())
		}
	}
	if !opts.Diff && !opts.Apply {
		return renderPlan(opts, format, plan, bootstrap)
	}
	c, err := getClients()
	if err != nil {
		return err
	}
	entries, err := diff(ctx, c, plan)
	if err != nil {
		return err
	}
	if opts.Diff {
		return renderDiff(opts, format, plan, entries, bootstrap)
	}
	return apply(ctx, opts, cfg, c, plan, entries, format)
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// planClusters returns the clusters of the plan's bindings, sorted.
func planClusters(bs []aclplan.Binding) []string {
	return distinct(bs, func(b aclplan.Binding) string { return b.Cluster })
}

// principals returns the principals of the plan's bindings, sorted.
func principals(bs []aclplan.Binding) []string {
	return distinct(bs, func(b aclplan.Binding) string { return b.Principal })
}

// distinct returns the distinct values of key over bs, sorted.
func distinct(bs []aclplan.Binding, key func(aclplan.Binding) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, b := range bs {
		if k := key(b); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func diff(ctx context.Context, c replicate.Clients, plan *aclplan.Plan) ([]aclplan.DiffEntry, error) {
	var existing []aclplan.Binding
	var errs []error
	for _, alias := range planClusters(plan.Bindings) {
		adm, err := c.Admin(alias)
		if err != nil {
			return nil, err
		}
		bs, err := aclplan.Describe(ctx, adm, alias, principals(plan.Bindings)...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		existing = append(existing, bs...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return aclplan.Diff(plan.Bindings, existing), nil
}

func apply(ctx context.Context, opts *ACLPlanOptions, cfg *config.Config, c replicate.Clients, plan *aclplan.Plan, entries []aclplan.DiffEntry, format string) error {
	if opts.Audit == nil {
		return errors.New("acl-plan --apply: no audit log is available, so nothing was created; print the plan with --format kafka-acls and apply it by hand")
	}
	log, err := opts.Audit()
	if err != nil {
		return fmt.Errorf("acl-plan --apply: open audit log: %w", err)
	}
	byCluster := map[string][]aclplan.Binding{}
	var missing []aclplan.Binding
	present := 0
	for _, e := range entries {
		switch e.Status {
		case aclplan.StatusMissing:
			byCluster[e.Binding.Cluster] = append(byCluster[e.Binding.Cluster], e.Binding)
			missing = append(missing, e.Binding)
		case aclplan.StatusPresent:
			present++
		}
	}
	res := ApplyResult{Envelope: output.NewEnvelope(), Created: []aclplan.ApplyResult{}, Present: present, Notes: plan.Notes}
	if len(missing) > 0 {
		end, err := log.Begin(ctx, "acl-plan", opts.Args, cfg.Digest(), missing)
		if err != nil {
			return fmt.Errorf("acl-plan --apply: audit: %w", err)
		}
		var errs []error
		for _, alias := range planClusters(missing) {
			adm, err := c.Admin(alias)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			created, err := aclplan.Create(ctx, adm, byCluster[alias])
			res.Created = append(res.Created, created...)
			if err != nil {
				errs = append(errs, err)
			}
		}
		applyErr := errors.Join(errs...)
		status := "" // audit derives ok, failed or interrupted
		failed := 0
		for _, r := range res.Created {
			if r.Error != "" {
				failed++
			}
		}
		if applyErr != nil && failed < len(missing) && ctx.Err() == nil {
			status = audit.StatusPartial // some bindings were created
		}
		if err := end(ctx, status, res.Created, applyErr); err != nil {
			applyErr = errors.Join(applyErr, fmt.Errorf("audit: %w", err))
		}
		if rerr := renderApply(opts, format, res); rerr != nil {
			return errors.Join(applyErr, rerr)
		}
		return applyErr
	}
	return renderApply(opts, format, res)
}
