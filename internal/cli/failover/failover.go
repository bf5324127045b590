// Package failover implements `mirrorctl failover` and `mirrorctl failback`:
// plan, then (with --apply) commit consumer-group offsets on the other
// cluster, then (with --verify) check them, following kcl's seek flow:
// preflight, a plan table, plan-only exit unless --apply, a confirmation on
// a terminal, audit entries around the commits, a per-partition outcome.
package failover

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/groupstate"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Options are the dependencies and flags of `mirrorctl failover` and
// `mirrorctl failback`.
type Options struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	Audit   func() (*audit.Log, error)
	Logger  *slog.Logger
	Now     func() time.Time // nil is time.Now; tests pin it

	Back bool     // failback
	Args []string // the command line, for the audit entry

	Source, Target   string
	Groups           []string
	GroupsRE         string
	Mode             string
	Apply            bool
	Verify           bool
	AllowRewind      bool
	Yes              bool
	MaxLag           time.Duration
	CheckpointMaxAge time.Duration
	AllowEmpty       bool
	ClampOffsets     bool
	WaitCaughtUp     time.Duration // --wait-caught-up: drain first, up to this long
	PlanOut          string        // --plan-out: write the plan (and the state it was made from) here
	FromPlan         string        // --from-plan: apply this saved plan
	FencePrincipals  []string      // --fence-principal: DENY WRITE on the source topics first
	Unfence          bool          // --unfence: remove that fence and exit
	Drill            bool          // --drill: the procedure on shadow groups
	DrillReport      string        // --drill-report: directory for the evidence
	DrillSuffix      string        // --drill-suffix
	KeepShadow       bool          // --keep-shadow-groups
}

func newOptions(f *cmdutil.Factory, back bool) *Options {
	return &Options{IO: f.IO, Output: f.Output, Config: f.Config, Logger: f.Logger, Now: f.Now, Audit: f.Audit, Back: back,
		Clients: func() (replicate.Clients, error) { return f.Kafka() }}
}

const exitStatus = "EXIT STATUS\n\n" +
	"  0    every named group is (or, for a plan, would be) moved completely: each\n" +
	"       partition committed or unchanged (and verified with --verify); also\n" +
	"       when the confirmation is declined: nothing is committed nor audited\n" +
	"  1    a cluster could not be read or written\n" +
	"  2    bad flags or an invalid mm2.properties, also two aliases of one\n" +
	"       cluster (same cluster ID; not checked by the unplanned type)\n" +
	"  3    a check failed: a precheck (group active, its state or offsets\n" +
	"       unknown, a share group, lag over --max-lag, stale checkpoints, an\n" +
	"       offset outside the partition), a named group with nothing to move\n" +
	"       (unless --allow-empty), a partition skipped (skip-rewind says how far\n" +
	"       ahead the target is; not replicated; no translation), refused,\n" +
	"       failed or of unknown outcome (its answer lost and the re-read\n" +
	"       inconclusive), a verification mismatch, or a cluster that could not\n" +
	"       be read to verify (rows say \"source unavailable\"). Each group gets one\n" +
	"       summary line on stderr\n" +
	"  130  interrupted; the audit log records exactly what was committed"

// NewCmdFailover returns `mirrorctl failover`. If runF is non-nil it is
// called with the options instead of the run function (tests).
func NewCmdFailover(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f, false)
	cmd := &cobra.Command{
		Use:   "failover {plan | apply | verify | drill} --type <planned|unplanned|restore> ...",
		Short: "Move consumer groups to the target cluster (or back), by the situation's type",
		Long: "Fail consumer groups over to the target at their translated positions, or back\n" +
			"(restore), with a plan first and evidence after. Name the situation:\n\n" + typeHelp + "\n" +
			"  mirrorctl failover plan    what a failover would commit, and what it would lose\n" +
			"  mirrorctl failover apply   do it; write the evidence (JSON and Markdown)\n" +
			"  mirrorctl failover verify  compare the committed positions record by record\n" +
			"  mirrorctl failover drill   rehearse it on shadow groups\n" +
			"  mirrorctl fence            stop (or allow again) writes to the source topics\n\n" +
			"The flags of `mirrorctl failover` itself (--apply, --verify, --drill,\n" +
			"--fence-principal, --unfence, --wait-caught-up, --plan-out, --from-plan) are the\n" +
			"old spellings, kept for scripts: each run prints one deprecation line naming the\n" +
			"verb that replaces it. Without --apply they plan and change nothing; --apply\n" +
			"commits only to groups absent or Empty on the target, never lowering an offset\n" +
			"unless --allow-rewind, audited.\n\n" + exitStatus,
		Example: "$ mirrorctl failover plan --type planned --group billing\n" +
			"$ mirrorctl failover apply --type planned --group billing --fence-principal User:billing-app --yes\n" +
			"$ mirrorctl failover apply --type unplanned --group billing --yes\n" +
			"$ mirrorctl failover apply --type restore --group billing --yes\n" +
			"$ mirrorctl failover drill --type planned --groups 'billing-.*'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, opts, runF) },
	}
	addFlags(cmd, opts)
	cmd.AddCommand(NewCmdFailoverPlan(f, nil), NewCmdFailoverApply(f, nil), NewCmdFailoverVerify(f, nil), NewCmdFailoverDrill(f, nil))
	cmdutil.StringEnumFlag(cmd, cmd.Flags(), &opts.Mode, "mode", "", string(failover.ModeAuto), failover.Modes(), "Translation mode")
	cmd.Flags().DurationVar(&opts.MaxLag, "max-lag", 0, "Refuse groups whose topics' replication lag is not under this `duration` (e.g. 30s)")
	cmd.Flags().BoolVar(&opts.Drill, "drill", false, "Run the whole failover against shadow groups on the target (group + --drill-suffix), verify, measure RPO and RTO, write the evidence and delete the shadows; the real groups are not touched")
	cmd.Flags().StringVar(&opts.DrillReport, "drill-report", "", "Directory for the drill's evidence (drill-<time>.json and .md; default $XDG_STATE_HOME/mirrorctl/evidence)")
	cmd.Flags().StringVar(&opts.DrillSuffix, "drill-suffix", failover.DefaultDrillSuffix, "Suffix of the drill's shadow groups")
	cmd.Flags().BoolVar(&opts.KeepShadow, "keep-shadow-groups", false, "Leave the drill's shadow groups on the target")
	cmd.Flags().DurationVar(&opts.WaitCaughtUp, "wait-caught-up", 0, "First wait up to this `duration` until each group's source position is replicated (exact translation); groups still behind are refused")
	cmd.Flags().DurationVar(&opts.CheckpointMaxAge, "checkpoint-max-age", 0, "Refuse checkpoint-mode rows older than this `duration` (default 3 x the checkpoint interval)")
	return cmd
}

// NewCmdFailback returns `mirrorctl failback`.
func NewCmdFailback(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := newOptions(f, true)
	cmd := &cobra.Command{
		Use:   "failback --source <alias> --target <alias> {--group <name>... | --groups <regex>} [--apply] [--verify]",
		Short: "Move consumer groups back to the source (old spelling of failover --type restore)",
		Long: "The old spelling of `mirrorctl failover plan|apply|verify --type restore`, kept\n" +
			"for scripts (each run prints one deprecation line).\n\n" +
			"The way back after a failover: translate each group's committed offsets on the\n" +
			"target's remote topics (us-east.orders on eu-west) to the source topics (orders\n" +
			"on us-east), exactly by content where the source answers, otherwise with the\n" +
			"conservative inverse of the flow's offset syncs (the newest sync whose\n" +
			"downstream offset is at or below the group's gives its upstream offset, plus 1\n" +
			"past it; rows say mode \"sync\"). --source and --target name the forward flow.\n" +
			"Plan, --apply, --verify and the safety rules are those of `mirrorctl failover`,\n" +
			"on the source cluster.\n\n" +
			"--mode auto (default) is the above; --mode exact fails instead of using the\n" +
			"offset syncs when the source does not answer. --mode checkpoint (and auto when\n" +
			"the target does not answer) reads the reverse checkpoints the flow writes to the\n" +
			"source with <source>-><target>.mirrorctl.reverse.checkpoints.enabled = true\n" +
			"(<target>.checkpoints.internal on the source), so it works with the target down;\n" +
			"a group with no reverse checkpoint, or one the mirror has not confirmed within\n" +
			"--checkpoint-max-age (default 3 x the checkpoint interval), is refused. There is\n" +
			"no --max-lag: the records the forward flow has not copied yet are on the source,\n" +
			"where the group resumes, so replication lag cannot make it skip any.\n\n" + exitStatus,
		Example: "$ mirrorctl failback --source us-east --target eu-west --group billing\n" +
			"$ mirrorctl failback --source us-east --target eu-west --group billing --apply --verify --yes\n" +
			"$ mirrorctl failback --source us-east --target eu-west --group billing --mode checkpoint --apply --yes   # eu-west down",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, opts, runF) },
	}
	addFlags(cmd, opts)
	cmdutil.StringEnumFlag(cmd, cmd.Flags(), &opts.Mode, "mode", "", string(failover.ModeAuto), failover.Modes(), "Translation mode (checkpoint: the reverse checkpoints; see above)")
	cmd.Flags().DurationVar(&opts.CheckpointMaxAge, "checkpoint-max-age", 0, "Refuse reverse checkpoints the mirror has not confirmed within this `duration` (default 3 x the checkpoint interval)")
	// Accepted only to explain why it does not apply (see run).
	cmd.Flags().DurationVar(&opts.MaxLag, "max-lag", 0, "Not supported by failback")
	_ = cmd.Flags().MarkHidden("max-lag")
	return cmd
}

func addFlags(cmd *cobra.Command, opts *Options) {
	fl := cmd.Flags()
	fl.StringVar(&opts.Source, "source", "", "Source cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringVar(&opts.Target, "target", "", "Target cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringArrayVar(&opts.Groups, "group", nil, "Consumer group `name` (repeatable)")
	fl.StringVar(&opts.GroupsRE, "groups", "", "Consumer groups whose name matches this `regex` (whole name, RE2)")
	fl.BoolVar(&opts.Apply, "apply", false, "Commit the plan (audited)")
	fl.BoolVar(&opts.Verify, "verify", false, "Compare the records at the committed offsets with the source's")
	fl.BoolVar(&opts.AllowRewind, "allow-rewind", false, "Allow lowering an offset already committed")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "Do not ask for confirmation on a terminal")
	fl.BoolVar(&opts.AllowEmpty, "allow-empty", false, "Exit 0 for a named group with no committed offset to move (it is still reported)")
	fl.BoolVar(&opts.ClampOffsets, "clamp-offsets", false, "Commit a translated offset below the log start (past the end) at the log start (end) instead of refusing the group")
	fl.StringArrayVar(&opts.FencePrincipals, "fence-principal", nil, "With --apply (failover): first deny this `principal` WRITE on the groups' source topics, wait until their end offsets stop, drain, then commit (repeatable; needs an authorizer)")
	fl.BoolVar(&opts.Unfence, "unfence", false, "Remove the write fence of the --fence-principal(s) on the groups' source topics, and exit")
	fl.StringVar(&opts.PlanOut, "plan-out", "", "Write the plan and the state it was made from to `file` (JSON), for --from-plan")
	fl.StringVar(&opts.FromPlan, "from-plan", "", "Use the plan saved in `file` by --plan-out; groups whose state changed since are refused")
}

func run(cmd *cobra.Command, opts *Options, runF func(*Options) error) error {
	if opts.FromPlan != "" {
		for _, name := range []string{"group", "groups", "mode", "allow-rewind", "max-lag", "checkpoint-max-age", "clamp-offsets", "plan-out", "wait-caught-up"} {
			if cmd.Flags().Changed(name) {
				return cmdutil.FlagErrorf("--%s does not go with --from-plan: the saved plan fixes the groups, offsets and safety settings", name)
			}
		}
	} else if len(opts.Groups) == 0 && opts.GroupsRE == "" {
		return cmdutil.FlagErrorf("name the groups with --group (repeatable) or --groups <regex>")
	}
	if opts.WaitCaughtUp < 0 || (opts.WaitCaughtUp > 0 && opts.Mode == string(failover.ModeCheckpoint)) {
		return cmdutil.FlagErrorf("--wait-caught-up needs a positive duration and exact translation (--mode auto or exact)")
	}
	if opts.Unfence && len(opts.FencePrincipals) == 0 {
		return cmdutil.FlagErrorf("--unfence needs the --fence-principal(s) whose fence to remove")
	}
	if len(opts.FencePrincipals) > 0 && !opts.Unfence {
		if opts.Back || !opts.Apply || opts.FromPlan != "" || opts.Drill {
			return cmdutil.FlagErrorf("--fence-principal fences a planned failover: it goes with failover --apply (not with failback, --from-plan or --drill); to remove a fence use --unfence")
		}
	}
	if opts.Drill {
		for _, name := range []string{"apply", "verify", "from-plan", "plan-out", "wait-caught-up", "allow-rewind"} {
			if cmd.Flags().Changed(name) {
				return cmdutil.FlagErrorf("--%s does not go with --drill: a drill commits to shadow groups and verifies them itself", name)
			}
		}
	}
	if opts.PlanOut != "" && opts.Apply {
		return cmdutil.FlagErrorf("--plan-out saves a plan to apply later with --from-plan; it does not go with --apply")
	}
	if opts.MaxLag < 0 || opts.CheckpointMaxAge < 0 {
		return cmdutil.FlagErrorf("--max-lag and --checkpoint-max-age must not be negative")
	}
	if opts.Back && cmd.Flags().Changed("max-lag") {
		return cmdutil.FlagErrorf("--max-lag does not apply to failback: the records the forward flow has not copied yet are on the source, where the group resumes, so replication lag cannot make it skip any")
	}
	cmdutil.Warnf(opts.IO, "%s", deprecation(cmd, opts))
	opts.Args = []string{cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, s := range sv.GetSlice() {
				opts.Args = append(opts.Args, "--"+f.Name+"="+s)
			}
			return
		}
		opts.Args = append(opts.Args, "--"+f.Name+"="+v)
	})
	if runF != nil {
		return runF(opts)
	}
	return Run(cmd.Context(), opts)
}

// deprecation is the one line the old spellings print on stderr, naming the
// verb that replaces them.
func deprecation(cmd *cobra.Command, opts *Options) string {
	name := cmd.Name()
	var now string
	switch {
	case opts.Unfence:
		now = "mirrorctl fence remove --principal <principal> --group <name>"
	case opts.Drill:
		now = "mirrorctl failover drill --type planned"
	case opts.Back && opts.Apply:
		now = "mirrorctl failover apply --type restore"
	case opts.Back && opts.Verify:
		now = "mirrorctl failover verify --type restore"
	case opts.Back:
		now = "mirrorctl failover plan --type restore"
	case len(opts.FencePrincipals) > 0:
		now = "mirrorctl failover apply --type planned --fence-principal <principal>"
	case opts.Apply:
		now = "mirrorctl failover apply --type planned --producers-stopped (the source up), or --type unplanned (the source down)"
	case opts.Verify:
		now = "mirrorctl failover verify"
	default:
		now = "mirrorctl failover plan --type planned (or unplanned, restore)"
	}
	return fmt.Sprintf("`mirrorctl %s` with these flags is deprecated and kept for scripts; use %s", name, now)
}

// Run plans, and with Apply commits, and with Verify verifies.
func Run(ctx context.Context, opts *Options) error {
	if opts.FromPlan != "" {
		return runFromPlan(ctx, opts)
	}
	eng, cfg, groups, err := cmdutil.SetupFailover(ctx, cmdutil.FailoverSetup{Config: opts.Config, Clients: opts.Clients, Logger: opts.Logger, Now: opts.Now,
		IO: opts.IO, Source: opts.Source, Target: opts.Target, Groups: opts.Groups, GroupsRE: opts.GroupsRE, OnTarget: opts.Back})
	if err != nil {
		return err
	}
	popts := failover.PlanOptions{Groups: groups, Mode: failover.Mode(opts.Mode), AllowRewind: opts.AllowRewind,
		MaxLag: opts.MaxLag, CheckpointMaxAge: opts.CheckpointMaxAge, ClampOffsets: opts.ClampOffsets}
	if opts.Drill {
		return runDrill(ctx, opts, eng, cfg, popts)
	}
	if len(opts.FencePrincipals) > 0 {
		done, err := runFence(ctx, opts, eng, cfg, popts)
		if err != nil || done {
			return err
		}
		if opts.WaitCaughtUp <= 0 {
			opts.WaitCaughtUp = 2 * time.Minute // the fence's drain
		}
	}
	var plan *failover.Plan
	switch {
	case opts.Back:
		plan, err = eng.PlanFailback(ctx, popts)
	case opts.WaitCaughtUp > 0:
		cmdutil.Notef(opts.IO, "waiting up to %s until every group's source position is replicated", opts.WaitCaughtUp)
		plan, err = eng.WaitCaughtUp(ctx, popts, opts.WaitCaughtUp, time.Second)
	default:
		plan, err = eng.PlanFailover(ctx, popts)
	}
	if err != nil {
		return err
	}
	if opts.PlanOut != "" {
		if err := savePlan(ctx, opts, eng, plan); err != nil {
			return err
		}
	}
	return execute(ctx, opts, eng, cfg, plan)
}

// savePlan writes plan and the state it was made from to opts.PlanOut,
// atomically (a temporary file renamed), mode 0600.
func savePlan(ctx context.Context, opts *Options, eng *failover.Engine, plan *failover.Plan) error {
	sp, err := eng.Save(ctx, plan)
	if err != nil {
		return err
	}
	dir := filepath.Dir(opts.PlanOut)
	f, err := os.CreateTemp(dir, ".plan-*.json")
	if err != nil {
		return fmt.Errorf("--plan-out %s: %w", opts.PlanOut, err)
	}
	defer os.Remove(f.Name())
	if _, err := sp.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("--plan-out %s: %w", opts.PlanOut, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--plan-out %s: %w", opts.PlanOut, err)
	}
	if err := os.Rename(f.Name(), opts.PlanOut); err != nil {
		return fmt.Errorf("--plan-out %s: %w", opts.PlanOut, err)
	}
	cmdutil.Notef(opts.IO, "plan saved to %s; apply it with --from-plan %s --apply", opts.PlanOut, opts.PlanOut)
	return nil
}

// runFence puts the write fence in place (or with --unfence removes it),
// audited. done is true when the command ends there (--unfence).
func runFence(ctx context.Context, opts *Options, eng *failover.Engine, cfg *config.Config, popts failover.PlanOptions) (bool, error) {
	var plan *failover.Plan
	var err error
	if opts.Back {
		plan, err = eng.PlanFailback(ctx, popts)
	} else {
		plan, err = eng.PlanFailover(ctx, popts)
	}
	if err != nil {
		return false, err
	}
	topics := failover.FenceTopics(plan)
	if len(topics) == 0 {
		return false, fmt.Errorf("the groups read no source topic of the flow: nothing to fence")
	}
	log, err := opts.Audit()
	if err != nil {
		return false, fmt.Errorf("audit log: %w (nothing was changed)", err)
	}
	what := map[string]any{"principals": opts.FencePrincipals, "topics": topics, "cluster": plan.Source}
	if opts.Unfence {
		// As `fence remove`: removing a fence that is not there changes
		// nothing and says so (exit 3), rather than report a removal.
		before, err := eng.Fences(ctx, topics, opts.FencePrincipals)
		if err != nil {
			return true, err
		}
		if len(before) == 0 {
			cmdutil.Errorf(opts.IO, "no write fence of %s on %s of %s: nothing removed", strings.Join(opts.FencePrincipals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), plan.Source)
			return true, cmdutil.ErrCheckFailed
		}
		op, err := log.Begin(ctx, "unfence", opts.Args, cfg.Digest(), what)
		if err != nil {
			return true, fmt.Errorf("audit log: %w (nothing was changed)", err)
		}
		uerr := eng.Unfence(ctx, topics, opts.FencePrincipals)
		st := audit.StatusOK
		if uerr != nil {
			st = audit.StatusFailed
		}
		if err := op.End(ctx, st, what, uerr); err != nil {
			uerr = errors.Join(uerr, fmt.Errorf("audit log: %w", err))
		}
		if uerr == nil {
			cmdutil.Successf(opts.IO, "write fence removed for %s on %s of %s (%d bindings)", strings.Join(opts.FencePrincipals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), plan.Source, len(before))
		}
		return true, uerr
	}
	op, err := log.Begin(ctx, "failover fence", opts.Args, cfg.Digest(), what)
	if err != nil {
		return false, fmt.Errorf("audit log: %w (nothing was changed)", err)
	}
	cmdutil.Notef(opts.IO, "fencing %s (DENY WRITE) on %s of %s, then waiting for their end offsets to stop", strings.Join(opts.FencePrincipals, ", "), cmdutil.Plural(len(topics), "topic", "topics"), plan.Source)
	fence, ferr := eng.Fence(ctx, topics, failover.FenceOptions{Principals: opts.FencePrincipals})
	st := audit.StatusOK
	if ferr != nil {
		st = audit.StatusFailed
	}
	if err := op.End(ctx, st, fence, ferr); err != nil {
		ferr = errors.Join(ferr, fmt.Errorf("audit log: %w", err))
	}
	if fence != nil {
		cmdutil.Notef(opts.IO, "the fence stays until removed: %s", fenceRemoveHint(plan.Source, plan.Target, opts.FencePrincipals, popts.Groups))
	}
	return false, ferr
}

// runDrill runs failover.Engine.Drill, audited like an apply, prints the
// shadow plan and writes the evidence (JSON and Markdown) to
// opts.DrillReport. Exit 3 unless every shadow partition was committed and
// verified.
func runDrill(ctx context.Context, opts *Options, eng *failover.Engine, cfg *config.Config, popts failover.PlanOptions) error {
	if opts.DrillReport == "" {
		// Not the current directory: the verbs' evidence directory, so a
		// drill run from anywhere leaves its evidence in one place.
		opts.DrillReport = filepath.Join(filepath.Dir(audit.DefaultPath()), "evidence")
		if err := os.MkdirAll(opts.DrillReport, 0o700); err != nil {
			return fmt.Errorf("evidence directory %s: %w", opts.DrillReport, err)
		}
	}
	if fi, err := os.Stat(opts.DrillReport); err != nil || !fi.IsDir() {
		return cmdutil.FlagErrorf("--drill-report %s: not a directory", opts.DrillReport)
	}
	log, err := opts.Audit()
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was committed)", err)
	}
	op, err := log.Begin(ctx, "failover drill", opts.Args, cfg.Digest(), map[string]any{"groups": popts.Groups, "suffix": opts.DrillSuffix})
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was committed)", err)
	}
	rep, derr := eng.Drill(ctx, failover.DrillOptions{PlanOptions: popts, Suffix: opts.DrillSuffix, Keep: opts.KeepShadow})
	st := audit.StatusOK
	switch {
	case ctx.Err() != nil:
		st = audit.StatusInterrupted
	case derr != nil:
		st = audit.StatusFailed
	case !rep.Passed():
		st = audit.StatusRefused
	}
	if err := op.End(ctx, st, rep, derr); err != nil {
		derr = errors.Join(derr, fmt.Errorf("audit log: %w", err))
	}
	if rep != nil && rep.Plan != nil {
		if err := render(opts, rep.Plan); err != nil {
			return err
		}
		printSummary(opts.IO, rep.Plan)
	}
	if rep != nil {
		base := filepath.Join(opts.DrillReport, "drill-"+rep.StartedAt.Format("20060102T150405Z"))
		if err := writeFileAtomic(base+".json", func(w io.Writer) error { return output.WriteJSON(w, rep) }); err != nil {
			return errors.Join(derr, err)
		}
		if err := writeFileAtomic(base+".md", rep.WriteMarkdown); err != nil {
			return errors.Join(derr, err)
		}
		cmdutil.Notef(opts.IO, "drill evidence: %s.json, %s.md (RTO %d ms, RPO %d records / %d ms)", base, base, rep.RTOMs, rep.RPORecords, rep.RPOMs)
		if rep.DeleteError != "" {
			cmdutil.Errorf(opts.IO, "shadow groups not deleted: %s", rep.DeleteError)
		}
	}
	if derr != nil {
		return derr
	}
	if !rep.Passed() || rep.DeleteError != "" {
		return cmdutil.ErrCheckFailed
	}
	return nil
}

// writeFileAtomic writes path through a temporary file in its directory,
// renamed into place, mode 0600.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(f.Name(), path)
}

// runFromPlan loads opts.FromPlan, refuses the groups whose state changed
// since it was saved (failover.Engine.Restore) and goes on as a plan made
// now would.
func runFromPlan(ctx context.Context, opts *Options) error {
	eng, cfg, plan, err := loadSavedPlan(ctx, opts)
	if err != nil {
		return err
	}
	return execute(ctx, opts, eng, cfg, plan)
}

// loadSavedPlan reads the plan saved in opts.FromPlan and restores it
// against the clusters now (failover.Engine.Restore): groups whose state
// changed since are refused.
func loadSavedPlan(ctx context.Context, opts *Options) (*failover.Engine, *config.Config, *failover.Plan, error) {
	f, err := os.Open(opts.FromPlan)
	if err != nil {
		return nil, nil, nil, cmdutil.FlagErrorf("--from-plan: %v", err)
	}
	sp, err := failover.ReadSavedPlan(f)
	f.Close()
	if err != nil {
		return nil, nil, nil, cmdutil.FlagErrorf("--from-plan %s: %v", opts.FromPlan, err)
	}
	if want := map[bool]failover.Direction{false: failover.Failover, true: failover.Failback}[opts.Back]; sp.Plan.Direction != want {
		return nil, nil, nil, cmdutil.FlagErrorf("--from-plan %s holds a %s plan; run it with mirrorctl %s", opts.FromPlan, sp.Plan.Direction, sp.Plan.Direction)
	}
	if (opts.Source != "" && opts.Source != sp.Plan.Source) || (opts.Target != "" && opts.Target != sp.Plan.Target) {
		return nil, nil, nil, cmdutil.FlagErrorf("--from-plan %s is for %s->%s, not the --source/--target given", opts.FromPlan, sp.Plan.Source, sp.Plan.Target)
	}
	groups := make([]string, 0, len(sp.Plan.Groups))
	for _, g := range sp.Plan.Groups {
		groups = append(groups, g.Group)
	}
	if len(groups) == 0 {
		return nil, nil, nil, cmdutil.FlagErrorf("--from-plan %s holds no group", opts.FromPlan)
	}
	eng, cfg, _, err := cmdutil.SetupFailover(ctx, cmdutil.FailoverSetup{Config: opts.Config, Clients: opts.Clients, Logger: opts.Logger, Now: opts.Now,
		IO: opts.IO, Source: sp.Plan.Source, Target: sp.Plan.Target, Groups: groups, OnTarget: opts.Back})
	if err != nil {
		return nil, nil, nil, err
	}
	plan, err := eng.Restore(ctx, sp)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--from-plan %s: %w", opts.FromPlan, err)
	}
	return eng, cfg, plan, nil
}

// execute confirms, applies, verifies, audits and renders plan.
func execute(ctx context.Context, opts *Options, eng *failover.Engine, cfg *config.Config, plan *failover.Plan) error {
	plan.Summarize(opts.AllowEmpty)
	name := "failover"
	if opts.Back {
		name = "failback"
	}
	commits := countActions(plan, failover.ActionCommit)
	// On a terminal (stdin and stdout) --apply asks first unless --yes; a
	// declined apply prints the plan as without --apply, commits nothing,
	// writes nothing to the audit log and exits 0. The JSON document is
	// printed once, after the answer.
	if opts.Apply && commits > 0 && opts.IO.CanPrompt() && !opts.Yes {
		json := opts.Output() == output.FormatJSON
		if !json {
			if err := render(opts, plan); err != nil {
				return err
			}
		}
		if !confirm(opts.IO, fmt.Sprintf("Commit %s of %s on %s? [y/N] ", cmdutil.Plural(commits, "partition", "partitions"), cmdutil.Plural(countGroups(plan), "group", "groups"), plan.CommitCluster())) {
			fmt.Fprintln(opts.IO.ErrOut, "not confirmed; nothing was committed")
			if json {
				return render(opts, plan)
			}
			return nil
		}
	}
	var applyErr error
	if opts.Apply {
		log, err := opts.Audit()
		if err != nil {
			return fmt.Errorf("audit log: %w (nothing was committed)", err)
		}
		op, err := log.Begin(ctx, name+" apply", opts.Args, cfg.Digest(), plan)
		if err != nil {
			return fmt.Errorf("audit log: %w (nothing was committed)", err)
		}
		applyErr = eng.Apply(ctx, plan)
		if applyErr == nil && opts.Verify {
			applyErr = eng.Verify(ctx, plan)
		}
		plan.Summarize(opts.AllowEmpty)
		if err := op.End(ctx, status(ctx, plan, applyErr), plan, applyErr); err != nil {
			applyErr = errors.Join(applyErr, fmt.Errorf("audit log: %w", err))
		}
	} else if opts.Verify {
		applyErr = eng.Verify(ctx, plan)
		plan.Summarize(opts.AllowEmpty)
	}
	if err := render(opts, plan); err != nil {
		return err
	}
	printSummary(opts.IO, plan)
	if applyErr != nil {
		return applyErr
	}
	if n := plan.Unverified(); n > 0 {
		cmdutil.Errorf(opts.IO, "%s could not be verified (see the verify notes)", cmdutil.Plural(n, "partition", "partitions"))
	}
	if plan.PrecheckFailed() || plan.Problems() > 0 || plan.Unverified() > 0 || plan.Incomplete() {
		return cmdutil.ErrCheckFailed
	}
	if opts.Apply && opts.IO.IsStderrTTY() {
		cmdutil.Successf(opts.IO, "committed %s on %s", cmdutil.Plural(plan.Committed(), "partition", "partitions"), plan.CommitCluster())
	}
	return nil
}

// printSummary writes to stderr every reason a group's move is incomplete
// (refusals first), then one line per group: what was (or would be)
// committed, left unchanged and skipped.
func printSummary(io *iostreams.IOStreams, plan *failover.Plan) {
	for _, g := range plan.Groups {
		for _, r := range g.Incomplete {
			cmdutil.Errorf(io, "%s", r)
		}
	}
	for _, g := range plan.Groups {
		fmt.Fprintln(io.ErrOut, output.Escape(g.Summary))
	}
}

// status is the audit status of an apply.
func status(ctx context.Context, plan *failover.Plan, err error) string {
	switch {
	case ctx.Err() != nil:
		return audit.StatusInterrupted
	case err != nil && plan.Committed() == 0:
		return audit.StatusFailed
	case plan.Problems() > 0 && plan.Committed() > 0, err != nil:
		return audit.StatusPartial
	case plan.Problems() > 0 || (plan.PrecheckFailed() && plan.Committed() == 0):
		return audit.StatusRefused
	case plan.Incomplete() && plan.Committed() > 0:
		return audit.StatusPartial
	case plan.Incomplete():
		return audit.StatusRefused
	}
	return audit.StatusOK
}

func countActions(plan *failover.Plan, a failover.Action) int {
	n := 0
	for _, g := range plan.Groups {
		if len(g.Refused) > 0 {
			continue
		}
		for _, p := range g.Partitions {
			if p.Action == a {
				n++
			}
		}
	}
	return n
}

func countGroups(plan *failover.Plan) int {
	n := 0
	for _, g := range plan.Groups {
		for _, p := range g.Partitions {
			if len(g.Refused) == 0 && p.Action == failover.ActionCommit {
				n++
				break
			}
		}
	}
	return n
}

// confirm asks on stderr and reads one line from stdin: "y" or "yes" (any
// case) is yes; anything else, EOF included, is no.
func confirm(io *iostreams.IOStreams, prompt string) bool {
	fmt.Fprint(io.ErrOut, prompt)
	line, _ := bufio.NewReader(io.In).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// PartitionRow is one partition in the JSON document. Failover rows add
// current_target_offset and failback rows current_source_offset (the
// group's commit before the run; null when none).
type PartitionRow struct {
	SourceTopic  string  `json:"source_topic"`
	Topic        string  `json:"topic"`
	Partition    int32   `json:"partition"`
	SourceOffset *int64  `json:"source_offset"`
	TargetOffset *int64  `json:"target_offset"`
	Action       string  `json:"action"`
	Mode         string  `json:"mode"`
	Rereads      *int64  `json:"rereads"`
	Reason       string  `json:"reason,omitempty"`
	Outcome      string  `json:"outcome,omitempty"`
	Error        string  `json:"error,omitempty"`
	Verified     *bool   `json:"verified"`
	VerifyNote   string  `json:"verify_note,omitempty"`
	Sync         *syncJS `json:"sync,omitempty"`
}

type syncJS = failover.SyncRef

// ForwardRow is a partition of a GroupRow moved to the target (types
// planned and unplanned): the row, and the group's offset committed on the
// target before the move (null when it had none).
type ForwardRow struct {
	PartitionRow
	CurrentTargetOffset *int64 `json:"current_target_offset"`
}

// BackRow is a partition of a GroupRow moved back to the source (type
// restore): the row, and the group's offset committed on the source before
// the move (null when it had none).
type BackRow struct {
	PartitionRow
	CurrentSourceOffset *int64 `json:"current_source_offset"`
}

// GroupRow is one group in the JSON document.
type GroupRow struct {
	Group       string   `json:"group"`
	TargetState string   `json:"target_state,omitempty"`
	SourceState string   `json:"source_state,omitempty"`
	Members     int      `json:"members"`
	Refused     []string `json:"refused,omitempty"`
	// GroupType is the group's type on the cluster committed to (classic,
	// consumer, share, ...); BlockingMembers the members that keep it
	// from being committed.
	GroupType       string              `json:"group_type,omitempty"`
	BlockingMembers []groupstate.Member `json:"blocking_members,omitempty"`
	// Summary is the group's summary line; Incomplete why its move falls
	// short (exit 3).
	Summary    string   `json:"summary"`
	Incomplete []string `json:"incomplete"`
	// Partitions holds ForwardRow or BackRow values.
	Partitions []any `json:"partitions"`
}

// Result is the JSON document of failover and failback.
type Result struct {
	output.Envelope
	Direction string     `json:"direction"`
	Applied   bool       `json:"applied"`
	Source    string     `json:"source"`
	Target    string     `json:"target"`
	Groups    []GroupRow `json:"groups"`
}

func toResult(plan *failover.Plan) Result {
	res := Result{Envelope: output.NewEnvelope(), Direction: string(plan.Direction), Applied: plan.Applied, Source: plan.Source, Target: plan.Target, Groups: []GroupRow{}}
	back := plan.Direction == failover.Failback
	for _, g := range plan.Groups {
		gr := GroupRow{Group: g.Group, Members: g.Members, Refused: g.Refused, Partitions: []any{},
			GroupType: g.Type, BlockingMembers: g.Blocking, Summary: g.Summary, Incomplete: append([]string{}, g.Incomplete...)}
		if back {
			gr.SourceState = g.State
		} else {
			gr.TargetState = g.State
		}
		for _, p := range g.Partitions {
			r := PartitionRow{SourceTopic: p.SourceTopic, Topic: p.Topic, Partition: p.Partition, SourceOffset: p.SourceOffset,
				TargetOffset: p.TargetOffset, Action: string(p.Action), Mode: string(p.Mode), Rereads: p.Rereads, Reason: p.Reason,
				Outcome: p.Outcome, Error: p.Error, Verified: p.Verified, VerifyNote: p.VerifyNote, Sync: p.Sync}
			if back {
				gr.Partitions = append(gr.Partitions, BackRow{r, p.Current})
			} else {
				gr.Partitions = append(gr.Partitions, ForwardRow{r, p.Current})
			}
		}
		res.Groups = append(res.Groups, gr)
	}
	return res
}

func render(opts *Options, plan *failover.Plan) error {
	if opts.Output() == output.FormatJSON {
		return writeResultJSON(opts.IO.Out, plan)
	}
	back := plan.Direction == failover.Failback
	headers := []string{"group", "topic", "partition", "source offset", "target offset", "current", "action", "mode", "rereads"}
	if back {
		headers = []string{"group", "source topic", "partition", "target offset", "source offset", "current", "action", "mode", "rereads"}
	}
	if plan.Applied {
		headers = append(headers, "outcome")
	}
	verified := false
	for _, g := range plan.Groups {
		for _, p := range g.Partitions {
			verified = verified || p.Verified != nil || p.VerifyNote != ""
		}
	}
	if verified {
		headers = append(headers, "verified")
	}
	headers = append(headers, "reason")
	t := output.NewTable(headers...)
	for _, g := range plan.Groups {
		for _, p := range g.Partitions {
			row := []string{g.Group, p.Topic, strconv.Itoa(int(p.Partition)), cmdutil.Opt(p.SourceOffset), cmdutil.Opt(p.TargetOffset)}
			if back {
				row = []string{g.Group, p.SourceTopic, strconv.Itoa(int(p.Partition)), cmdutil.Opt(p.TargetOffset), cmdutil.Opt(p.SourceOffset)}
			}
			row = append(row, cmdutil.Opt(p.Current), string(p.Action), string(p.Mode), cmdutil.Opt(p.Rereads))
			if plan.Applied {
				row = append(row, p.Outcome)
			}
			if verified {
				v := ""
				switch {
				case p.Verified != nil:
					v = map[bool]string{true: "pass", false: "fail"}[*p.Verified]
				case p.VerifyNote != "":
					v = "unknown"
				}
				row = append(row, v)
			}
			reason := p.Reason
			for _, s := range []string{p.Error, p.VerifyNote} {
				if s != "" && (p.Verified == nil || !*p.Verified || s == p.Error) {
					reason = strings.TrimPrefix(reason+"; "+s, "; ")
				}
			}
			t.AddRow(append(row, reason)...)
		}
	}
	return t.Render(opts.IO, opts.Output())
}
