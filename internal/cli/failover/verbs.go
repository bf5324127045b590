package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/output"
)

// The verbs of `mirrorctl failover`: plan, apply, verify and drill, each a
// failover of a named type (failover.Type). The engine decides what each
// type proves (package failover: Engine.Quiesce, Engine.Prepare,
// NewEvidence); these commands pick the flow and groups, ask on a
// terminal, audit, write the evidence and render.

// verb are the flags every verb shares, and the dependencies.
type verb struct {
	*Options
	Verb        string
	Type        string
	EvidenceDir string
	// apply
	FencePrincipals  []string
	ProducersStopped bool
	Settle, Drain    time.Duration
	AllowSourceUp    bool
	AllowBehind      bool
	NoVerify         bool
	// drill
	DrillSuffix string
	KeepShadow  bool
}

const typeHelp = "  planned    the source is up: its writes are stopped (--fence-principal, or\n" +
	"             --producers-stopped), the end offsets proven quiet and mirrored,\n" +
	"             then the exact positions committed. RPO 0, by proof.\n" +
	"  unplanned  the source is unreachable: only the target's checkpoints and the\n" +
	"             mirror's progress are used, never waiting on the source; each\n" +
	"             partition gets an error bound (read again at most, not mirrored at\n" +
	"             least). Refused while the source answers (--allow-source-up).\n" +
	"  restore    the way back (failback): positions on the target go back to the\n" +
	"             source; with a reverse flow in the config, the groups' topics on\n" +
	"             the target go along it, refused while it has not copied back what\n" +
	"             they consumed (--allow-behind counts those as read again).\n"

func newVerb(f *cmdutil.Factory, name string) *verb {
	return &verb{Options: newOptions(f, false), Verb: name, Type: string(failover.TypePlanned)}
}

func (v *verb) addSelection(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&v.Source, "source", "", "Source cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringVar(&v.Target, "target", "", "Target cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringArrayVar(&v.Groups, "group", nil, "Consumer group `name` (repeatable)")
	fl.StringVar(&v.GroupsRE, "groups", "", "Consumer groups whose name matches this `regex` (whole name, RE2)")
	cmdutil.StringEnumFlag(cmd, fl, &v.Type, "type", "", string(failover.TypePlanned), failover.Types(), "Failover type (see above)")
	fl.DurationVar(&v.CheckpointMaxAge, "checkpoint-max-age", 0, "Refuse checkpoint rows older than this `duration` (default 3 x the checkpoint interval)")
}

func (v *verb) addPlanFlags(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&v.AllowRewind, "allow-rewind", false, "Allow lowering an offset already committed")
	fl.BoolVar(&v.ClampOffsets, "clamp-offsets", false, "Commit an offset below the log start (past the end) at the log start (end) instead of refusing the group")
	fl.BoolVar(&v.AllowEmpty, "allow-empty", false, "Exit 0 for a named group with no committed offset to move (it is still reported)")
	fl.BoolVar(&v.AllowSourceUp, "allow-source-up", false, "unplanned: run although the source answers")
	fl.BoolVar(&v.AllowBehind, "allow-behind", false, "restore: move groups although the reverse flow has not copied back all they consumed (those records are read again)")
}

// NewCmdFailoverPlan returns `mirrorctl failover plan`.
func NewCmdFailoverPlan(f *cmdutil.Factory, runF func(*verb) error) *cobra.Command {
	v := newVerb(f, "plan")
	cmd := &cobra.Command{
		Use:   "plan --type <type> {--group <name>... | --groups <regex>}",
		Short: "Show what a failover of a type would commit, and what it would lose",
		Long: "Plan a failover and change nothing: per group and partition the source offset,\n" +
			"the translated offset, the group's current offset, the action and the records\n" +
			"read again, and the recovery point the type can promise.\n\n" + typeHelp + "\n" + exitStatus,
		Example: "$ mirrorctl failover plan --type planned --group billing\n" +
			"$ mirrorctl failover plan --type unplanned --groups 'billing-.*' -o json\n" +
			"$ mirrorctl failover plan --type restore --source us-east --target eu-west --group billing",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return v.run(cmd, runF) },
	}
	v.addSelection(cmd)
	v.addPlanFlags(cmd)
	cmd.Flags().StringVar(&v.PlanOut, "plan-out", "", "planned, unplanned: write the plan and the state it was made from to `file` (JSON), for apply --from-plan")
	return cmd
}

// NewCmdFailoverApply returns `mirrorctl failover apply`.
func NewCmdFailoverApply(f *cmdutil.Factory, runF func(*verb) error) *cobra.Command {
	v := newVerb(f, "apply")
	cmd := &cobra.Command{
		Use:   "apply --type <type> {--group <name>... | --groups <regex>} [--yes]",
		Short: "Fail consumer groups over (or back), with the evidence of what it lost",
		Long: "Run a failover of a type: prove what it promises, commit the groups' translated\n" +
			"offsets (only to groups absent or Empty there, never lowering one unless\n" +
			"--allow-rewind), verify each committed position record by record where both\n" +
			"clusters answer, and write the evidence (JSON and Markdown: the type, each\n" +
			"partition's offset before and after, RPO and RTO and how they were established,\n" +
			"the audit operations) to --evidence-dir, printing the path. On a terminal it\n" +
			"asks first unless --yes; it never prompts when stdin is not a terminal.\n\n" + typeHelp + "\n" +
			"A fence (--fence-principal) stays after the failover, as the old cluster must\n" +
			"take no writes; remove it with `mirrorctl fence remove`.\n\n" + exitStatus,
		Example: "$ mirrorctl failover apply --type planned --group billing --fence-principal User:billing-app --yes\n" +
			"$ mirrorctl failover apply --type planned --group billing --producers-stopped --yes\n" +
			"$ mirrorctl failover apply --type unplanned --group billing --yes -o json\n" +
			"$ mirrorctl failover apply --type restore --source us-east --target eu-west --group billing --yes",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return v.run(cmd, runF) },
	}
	v.addSelection(cmd)
	v.addPlanFlags(cmd)
	fl := cmd.Flags()
	fl.BoolVarP(&v.Yes, "yes", "y", false, "Do not ask for confirmation on a terminal")
	fl.StringArrayVar(&v.FencePrincipals, "fence-principal", nil, "planned: deny this `principal` WRITE on the groups' source topics first (repeatable; needs an authorizer)")
	fl.BoolVar(&v.ProducersStopped, "producers-stopped", false, "planned, no authorizer: state that no producer writes to the groups' source topics any more (recorded in the audit and the evidence)")
	fl.DurationVar(&v.Settle, "settle", 5*time.Second, "planned: how long the source end offsets must stay unchanged")
	fl.DurationVar(&v.Drain, "drain", 2*time.Minute, "planned: how long the mirror may take to copy up to them")
	fl.BoolVar(&v.NoVerify, "no-verify", false, "Skip the record-by-record verification of the committed positions")
	fl.StringVar(&v.FromPlan, "from-plan", "", "Apply the plan saved by `failover plan --plan-out` in `file`; groups whose state changed since are refused")
	fl.StringVar(&v.EvidenceDir, "evidence-dir", "", "Directory for the evidence (default $XDG_STATE_HOME/mirrorctl/evidence)")
	return cmd
}

// NewCmdFailoverVerify returns `mirrorctl failover verify`.
func NewCmdFailoverVerify(f *cmdutil.Factory, runF func(*verb) error) *cobra.Command {
	v := newVerb(f, "verify")
	cmd := &cobra.Command{
		Use:   "verify {--group <name>... | --groups <regex>} [--type restore]",
		Short: "Check that groups' committed positions match the other cluster's",
		Long: "Read the record at each group's committed position on the cluster it was\n" +
			"failed over to (on the source with --type restore) and compare it with the\n" +
			"record at the group's position on the other cluster (timestamp, key, value,\n" +
			"header digest). Changes nothing; a mismatch exits 3.\n\n" + exitStatus,
		Example: "$ mirrorctl failover verify --group billing\n" +
			"$ mirrorctl failover verify --type restore --group billing",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return v.run(cmd, runF) },
	}
	v.addSelection(cmd)
	return cmd
}

// NewCmdFailoverDrill returns `mirrorctl failover drill`.
func NewCmdFailoverDrill(f *cmdutil.Factory, runF func(*verb) error) *cobra.Command {
	v := newVerb(f, "drill")
	cmd := &cobra.Command{
		Use:   "drill --type <planned|unplanned> {--group <name>... | --groups <regex>}",
		Short: "Rehearse a failover on shadow groups, leaving the real groups untouched",
		Long: "Run the failover against shadow groups on the target (group + --drill-suffix):\n" +
			"plan the real groups read-only, commit to the shadows, verify every committed\n" +
			"position record by record, measure RPO and RTO, write the evidence to\n" +
			"--evidence-dir and delete the shadows. The real groups are never touched.\n" +
			"--type planned translates exactly (the source answers); --type unplanned\n" +
			"uses only what the target holds, as an outage would. Exit 3 unless every\n" +
			"partition passed.\n\n" + exitStatus,
		Example: "$ mirrorctl failover drill --type planned --group billing\n" +
			"$ mirrorctl failover drill --type unplanned --groups 'billing-.*' --evidence-dir evidence/",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return v.run(cmd, runF) },
	}
	v.addSelection(cmd)
	fl := cmd.Flags()
	fl.StringVar(&v.DrillSuffix, "drill-suffix", failover.DefaultDrillSuffix, "Suffix of the drill's shadow groups")
	fl.BoolVar(&v.KeepShadow, "keep-shadow-groups", false, "Leave the shadow groups on the target")
	fl.StringVar(&v.EvidenceDir, "evidence-dir", "", "Directory for the evidence (default $XDG_STATE_HOME/mirrorctl/evidence)")
	return cmd
}

// run checks the flags of v's verb, then runs it (or runF in tests).
func (v *verb) run(cmd *cobra.Command, runF func(*verb) error) error {
	t := failover.Type(v.Type)
	if v.FromPlan == "" && len(v.Groups) == 0 && v.GroupsRE == "" {
		return cmdutil.FlagErrorf("name the groups with --group (repeatable) or --groups <regex>")
	}
	if v.FromPlan != "" && (len(v.Groups) > 0 || v.GroupsRE != "") {
		return cmdutil.FlagErrorf("--from-plan fixes the groups: it does not go with --group or --groups")
	}
	switch {
	case (len(v.FencePrincipals) > 0 || v.ProducersStopped) && t != failover.TypePlanned:
		return cmdutil.FlagErrorf("--fence-principal and --producers-stopped stop the source's writes, which only a planned failover does (this is --type %s)", t)
	case v.AllowSourceUp && t != failover.TypeUnplanned:
		return cmdutil.FlagErrorf("--allow-source-up goes with --type unplanned")
	case v.AllowBehind && t != failover.TypeRestore:
		return cmdutil.FlagErrorf("--allow-behind goes with --type restore")
	case v.Verb == "drill" && t == failover.TypeRestore:
		return cmdutil.FlagErrorf("a drill rehearses a failover (planned or unplanned); restore has none")
	case v.Verb == "apply" && t == failover.TypePlanned && len(v.FencePrincipals) == 0 && !v.ProducersStopped:
		return cmdutil.FlagErrorf("a planned failover stops the source's writes first: --fence-principal <principal> (an authorizer on the source), or --producers-stopped to state they stopped; " +
			"with the source down use --type unplanned")
	case v.Settle < 0 || v.Drain < 0 || v.CheckpointMaxAge < 0:
		return cmdutil.FlagErrorf("--settle, --drain and --checkpoint-max-age must not be negative")
	}
	v.Back = t == failover.TypeRestore
	v.Apply = v.Verb == "apply"
	v.Args = []string{"failover", cmd.Name()}
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			for _, s := range sv.GetSlice() {
				v.Args = append(v.Args, "--"+fl.Name+"="+s)
			}
			return
		}
		v.Args = append(v.Args, "--"+fl.Name+"="+fl.Value.String())
	})
	if runF != nil {
		return runF(v)
	}
	return v.exec(cmd.Context())
}

// exec runs the verb.
func (v *verb) exec(ctx context.Context) error {
	t := failover.Type(v.Type)
	if v.FromPlan != "" {
		return v.applySaved(ctx, t)
	}
	eng, cfg, groups, err := cmdutil.SetupFailover(ctx, cmdutil.FailoverSetup{Config: v.Config, Clients: v.Clients, Logger: v.Logger, Now: v.Now,
		IO: v.IO, Source: v.Source, Target: v.Target, Groups: v.Groups, GroupsRE: v.GroupsRE, OnTarget: v.Back,
		NoClusterCheck: t == failover.TypeUnplanned})
	if err != nil {
		return err
	}
	po := failover.ProcedureOptions{Type: t, PlanOptions: failover.PlanOptions{Groups: groups, AllowRewind: v.AllowRewind,
		CheckpointMaxAge: v.CheckpointMaxAge, ClampOffsets: v.ClampOffsets}, FencePrincipals: v.FencePrincipals,
		ProducersStopped: v.ProducersStopped, Settle: v.Settle, Drain: v.Drain, AllowSourceUp: v.AllowSourceUp, AllowBehind: v.AllowBehind}
	engines := []*failover.Engine{eng}
	if t == failover.TypeRestore {
		if rev, ok := reverseEngine(ctx, v, cfg, eng, groups); ok {
			po.Reverse = rev
			engines = append(engines, rev)
		}
	}
	switch v.Verb {
	case "plan":
		return v.plan(ctx, eng, po)
	case "verify":
		return v.verify(ctx, eng, po)
	case "drill":
		return v.drill(ctx, eng, cfg, po)
	}
	return v.apply(ctx, engines, cfg, po, func(q *failover.Quiescence) (*failover.Procedure, error) { return eng.Prepare(ctx, po, q) })
}

// applySaved applies the plan saved by `failover plan --plan-out`, as a
// failover of type t (restore for a failback plan): the quiescence of a
// planned one first, then the saved plan restored against the clusters
// (groups whose state changed since are refused), its recovery point
// established now.
func (v *verb) applySaved(ctx context.Context, t failover.Type) error {
	eng, cfg, plan, err := loadSavedPlan(ctx, v.Options)
	if err != nil {
		return err
	}
	var groups []string
	for _, g := range plan.Groups {
		groups = append(groups, g.Group)
	}
	po := failover.ProcedureOptions{Type: t, PlanOptions: failover.PlanOptions{Groups: groups, AllowRewind: v.AllowRewind, ClampOffsets: v.ClampOffsets},
		FencePrincipals: v.FencePrincipals, ProducersStopped: v.ProducersStopped, Settle: v.Settle, Drain: v.Drain}
	return v.apply(ctx, []*failover.Engine{eng}, cfg, po, func(q *failover.Quiescence) (*failover.Procedure, error) {
		if q != nil {
			// Restored again after the writes stopped: the saved
			// positions must still be the groups' own.
			var err error
			if _, _, plan, err = loadSavedPlan(ctx, v.Options); err != nil {
				return nil, err
			}
		}
		return eng.PrepareSaved(ctx, po, q, plan)
	})
}

// reverseEngine builds the engine of the reverse flow (target->source) when
// the configuration enables one; restore moves the groups' topics on the
// target along it.
func reverseEngine(ctx context.Context, v *verb, cfg *config.Config, eng *failover.Engine, groups []string) (*failover.Engine, bool) {
	src, tgt := eng.Flow()
	fl, ok := cfg.Flow(tgt, src)
	if !ok || !fl.Enabled {
		return nil, false
	}
	rev, _, _, err := cmdutil.SetupFailover(ctx, cmdutil.FailoverSetup{Config: v.Config, Clients: v.Clients, Logger: v.Logger, Now: v.Now,
		IO: v.IO, Source: tgt, Target: src, Groups: groups, NoClusterCheck: true})
	if err != nil {
		cmdutil.Warnf(v.IO, "the reverse flow %s->%s cannot be used: %v", tgt, src, err)
		return nil, false
	}
	return rev, true
}

func (v *verb) plan(ctx context.Context, eng *failover.Engine, po failover.ProcedureOptions) error {
	proc, err := eng.Prepare(ctx, po, nil)
	if err != nil {
		return err
	}
	if v.PlanOut != "" && len(proc.Plans) == 1 {
		if err := savePlan(ctx, v.Options, eng, proc.Plans[0]); err != nil {
			return err
		}
	}
	return v.finish(proc, nil, false)
}

func (v *verb) verify(ctx context.Context, eng *failover.Engine, po failover.ProcedureOptions) error {
	proc, err := eng.Prepare(ctx, po, nil)
	if err != nil {
		return err
	}
	var verr error
	for _, plan := range proc.Plans[:1] {
		verr = errors.Join(verr, eng.Verify(ctx, plan))
	}
	if verr != nil {
		return verr
	}
	return v.finish(proc, nil, false)
}

// apply runs a failover of po.Type with engines (the flow's, and for
// restore the reverse flow's): the quiescence of a planned one (audited:
// its fence is a write), the plans, a confirmation on a terminal, the
// commits and the verification (audited), and the evidence.
func (v *verb) apply(ctx context.Context, engines []*failover.Engine, cfg *config.Config, po failover.ProcedureOptions,
	prepare func(*failover.Quiescence) (*failover.Procedure, error)) error {
	eng := engines[0]
	log, err := v.Audit()
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was changed)", err)
	}
	var ops []string
	var q *failover.Quiescence
	if po.Type == failover.TypePlanned {
		if q, err = v.quiesce(ctx, eng, cfg, log, po, &ops); err != nil {
			return err
		}
	}
	proc, err := prepare(q)
	if err != nil {
		return err
	}
	commits := 0
	for _, plan := range proc.Plans {
		plan.Summarize(v.AllowEmpty)
		commits += countActions(plan, failover.ActionCommit)
	}
	if commits > 0 && v.IO.CanPrompt() && !v.Yes {
		if err := v.renderTables(proc); err != nil {
			return err
		}
		if !confirm(v.IO, fmt.Sprintf("Commit %s (%s failover)? [y/N] ", cmdutil.Plural(commits, "partition", "partitions"), po.Type)) {
			fmt.Fprintln(v.IO.ErrOut, "not confirmed; nothing was committed")
			return nil
		}
	}
	op, err := log.Begin(ctx, "failover apply", v.Args, cfg.Digest(), map[string]any{"type": po.Type, "plans": proc.Plans, "quiescence": q})
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was committed)", err)
	}
	ops = append(ops, op.ID())
	var applyErr error
	for i, plan := range proc.Plans {
		e := engines[min(i, len(engines)-1)]
		if err := e.Apply(ctx, plan); err != nil {
			applyErr = errors.Join(applyErr, err)
			continue
		}
		if !v.NoVerify && po.Type != failover.TypeUnplanned {
			applyErr = errors.Join(applyErr, e.Verify(ctx, plan))
		}
		plan.Summarize(v.AllowEmpty)
	}
	ev := failover.NewEvidence(proc, v.now(), ops)
	st := audit.StatusOK
	switch {
	case ctx.Err() != nil:
		st = audit.StatusInterrupted
	case applyErr != nil:
		st = audit.StatusFailed
	case !ev.Passed:
		st = audit.StatusPartial
	}
	if err := op.End(ctx, st, ev, applyErr); err != nil {
		applyErr = errors.Join(applyErr, fmt.Errorf("audit log: %w", err))
	}
	if err := v.finish(proc, ev, true); err != nil && applyErr == nil {
		return err
	}
	return applyErr
}

// quiesce stops the source's writes for a planned failover, audited.
func (v *verb) quiesce(ctx context.Context, eng *failover.Engine, cfg *config.Config, log *audit.Log, po failover.ProcedureOptions, ops *[]string) (*failover.Quiescence, error) {
	what := map[string]any{"principals": po.FencePrincipals, "producers_stopped": po.ProducersStopped, "groups": po.Groups}
	name := "fence add"
	if len(po.FencePrincipals) == 0 {
		name = "failover quiesce"
	}
	op, err := log.Begin(ctx, name, v.Args, cfg.Digest(), what)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w (nothing was changed)", err)
	}
	*ops = append(*ops, op.ID())
	if len(po.FencePrincipals) > 0 {
		cmdutil.Notef(v.IO, "fencing %s (DENY WRITE) on the groups' source topics, then waiting %s for their end offsets to stay still", strings.Join(po.FencePrincipals, ", "), v.Settle)
	} else {
		cmdutil.Notef(v.IO, "producers stated stopped: waiting %s for the groups' source end offsets to stay still", v.Settle)
	}
	q, qerr := eng.Quiesce(ctx, po)
	st := audit.StatusOK
	if qerr != nil {
		st = audit.StatusFailed
	}
	if err := op.End(ctx, st, q, qerr); err != nil {
		qerr = errors.Join(qerr, fmt.Errorf("audit log: %w", err))
	}
	if q != nil && q.Fence != nil {
		src, tgt := eng.Flow()
		cmdutil.Notef(v.IO, "the fence stays until removed: %s", fenceRemoveHint(src, tgt, po.FencePrincipals, po.Groups))
	}
	if qerr != nil {
		return nil, fmt.Errorf("planned failover not started, nothing committed: %w", qerr)
	}
	return q, nil
}

// fenceRemoveHint is the command that removes the fence of principals on
// the flow source->target's topics of groups.
func fenceRemoveHint(source, target string, principals, groups []string) string {
	out := []string{"mirrorctl fence remove --source", source, "--target", target}
	for _, p := range principals {
		out = append(out, "--principal", p)
	}
	for _, g := range groups {
		out = append(out, "--group", g)
	}
	return strings.Join(out, " ")
}

// drill rehearses a failover of po.Type on shadow groups (see
// failover.Engine.Drill), audited, and writes the evidence.
func (v *verb) drill(ctx context.Context, eng *failover.Engine, cfg *config.Config, po failover.ProcedureOptions) error {
	dopts := failover.DrillOptions{PlanOptions: po.PlanOptions, Suffix: v.DrillSuffix, Keep: v.KeepShadow}
	if po.Type == failover.TypeUnplanned {
		dopts.Mode, dopts.TargetOnly = failover.ModeCheckpoint, true
	}
	log, err := v.Audit()
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was committed)", err)
	}
	op, err := log.Begin(ctx, "failover drill", v.Args, cfg.Digest(), map[string]any{"type": po.Type, "groups": po.Groups, "suffix": v.DrillSuffix})
	if err != nil {
		return fmt.Errorf("audit log: %w (nothing was committed)", err)
	}
	started := v.now()
	rep, derr := eng.Drill(ctx, dopts)
	proc := &failover.Procedure{Type: po.Type, StartedAt: started.UTC()}
	if rep != nil {
		proc.RPO = failover.RPO{Records: rep.RPORecords, Ms: rep.RPOMs, How: fmt.Sprintf("not proven: measured at the drill's start, the source records not yet on the target (%d partitions); the real failover proves its own", len(rep.Partitions))}
		if rep.Plan != nil {
			proc.Plans = []*failover.Plan{rep.Plan}
		}
	}
	ev := failover.NewEvidence(proc, v.now(), []string{op.ID()})
	ev.Drill = true
	if rep != nil {
		ev.Passed = ev.Passed && rep.Passed() && rep.DeleteError == ""
	}
	st := audit.StatusOK
	switch {
	case ctx.Err() != nil:
		st = audit.StatusInterrupted
	case derr != nil:
		st = audit.StatusFailed
	case !ev.Passed:
		st = audit.StatusRefused
	}
	if err := op.End(ctx, st, ev, derr); err != nil {
		derr = errors.Join(derr, fmt.Errorf("audit log: %w", err))
	}
	if rep != nil && rep.DeleteError != "" {
		cmdutil.Errorf(v.IO, "shadow groups not deleted: %s", rep.DeleteError)
	}
	if err := v.finish(proc, ev, true); err != nil && derr == nil {
		return err
	}
	return derr
}

// finish renders proc (and ev), writes the evidence and chooses the exit:
// 3 when a plan is incomplete or the evidence did not pass.
func (v *verb) finish(proc *failover.Procedure, ev *failover.Evidence, acted bool) error {
	var paths []string
	if ev != nil {
		var err error
		if paths, err = writeEvidence(v.evidenceDir(), ev); err != nil {
			return err
		}
	}
	if v.Output() == output.FormatJSON {
		if err := writeVerbResultJSON(v.IO.Out, proc, ev, paths); err != nil {
			return err
		}
	} else if err := v.renderTables(proc); err != nil {
		return err
	}
	for _, plan := range proc.Plans {
		plan.Summarize(v.AllowEmpty)
		printSummary(v.IO, plan)
	}
	// verify checks positions already committed: the recovery point of a
	// plan made now says nothing about them (it read as if nothing had
	// been applied), so it is left to plan, apply and drill.
	switch {
	case v.Verb == "verify":
	case proc.RPO.Proven:
		cmdutil.Notef(v.IO, "RPO: %d records, proven: %s", proc.RPO.Records, proc.RPO.How)
	default:
		cmdutil.Notef(v.IO, "RPO: %d records: %s", proc.RPO.Records, proc.RPO.How)
	}
	if len(paths) > 0 {
		cmdutil.Notef(v.IO, "evidence: %s", strings.Join(paths, ", "))
	}
	for _, plan := range proc.Plans {
		if plan.PrecheckFailed() || plan.Problems() > 0 || plan.Unverified() > 0 || plan.Incomplete() {
			return cmdutil.ErrCheckFailed
		}
	}
	if ev != nil && !ev.Passed {
		return cmdutil.ErrCheckFailed
	}
	if acted && v.IO.IsStderrTTY() && ev != nil {
		cmdutil.Successf(v.IO, "%s failover done: RTO %d ms", proc.Type, ev.RTOMs)
	}
	return nil
}

func (v *verb) renderTables(proc *failover.Procedure) error {
	for _, plan := range proc.Plans {
		if err := render(v.Options, plan); err != nil {
			return err
		}
	}
	if len(proc.Bounds) == 0 {
		return nil
	}
	t := output.NewTable("group", "source topic", "partition", "checkpoint", "committed", "target end", "copied", "source end seen", "reread max", "not mirrored min")
	for _, b := range proc.Bounds {
		t.AddRow(b.Group, b.SourceTopic, strconv.Itoa(int(b.Partition)), strconv.FormatInt(b.Checkpoint, 10), failover.Unknown(b.Committed), failover.Unknown(b.TargetEnd),
			failover.Unknown(b.Copied), failover.Unknown(b.SourceEnd), failover.Unknown(b.RereadMax), failover.Unknown(b.NotMirroredMin))
	}
	return t.Render(v.IO, v.Output())
}

func (v *verb) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// evidenceDir is --evidence-dir, else mirrorctl's state directory's
// evidence/ ($XDG_STATE_HOME/mirrorctl, else ~/.local/state/mirrorctl).
func (v *verb) evidenceDir() string {
	if v.EvidenceDir != "" {
		return v.EvidenceDir
	}
	return filepath.Join(filepath.Dir(audit.DefaultPath()), "evidence")
}

// writeEvidence writes ev as JSON and Markdown into dir (created, 0700),
// named after its type and start, and returns the two paths.
func writeEvidence(dir string, ev *failover.Evidence) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("evidence directory %s: %w", dir, err)
	}
	kind := string(ev.Type)
	if ev.Drill {
		kind += "-drill"
	}
	base := filepath.Join(dir, fmt.Sprintf("failover-%s-%s", kind, ev.StartedAt.Format("20060102T150405.000Z")))
	if err := writeFileAtomic(base+".json", func(w io.Writer) error { return output.WriteJSON(w, ev) }); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(base+".md", ev.WriteMarkdown); err != nil {
		return nil, err
	}
	return []string{base + ".json", base + ".md"}, nil
}

// VerbResult is the JSON document of the failover verbs: the plans (as
// `failover -o json` renders one), the procedure's recovery point and
// bounds, and after apply or drill the evidence and where it was written.
type VerbResult struct {
	output.Envelope
	Type         failover.Type        `json:"type"`
	Plans        []Result             `json:"plans"`
	RPO          failover.RPO         `json:"rpo"`
	Bounds       []failover.Bound     `json:"bounds,omitempty"`
	Duplicates   int64                `json:"duplicates"`
	Evidence     *failover.Evidence   `json:"evidence,omitempty"`
	EvidenceFile []string             `json:"evidence_files,omitempty"`
	Quiescence   *failover.Quiescence `json:"quiescence,omitempty"`
}

func toVerbResult(proc *failover.Procedure, ev *failover.Evidence, paths []string) VerbResult {
	r := VerbResult{Envelope: output.NewEnvelope(), Type: proc.Type, Plans: []Result{}, RPO: proc.RPO, Bounds: proc.Bounds,
		Duplicates: proc.Duplicates, Evidence: ev, EvidenceFile: paths, Quiescence: proc.Quiescence}
	for _, plan := range proc.Plans {
		r.Plans = append(r.Plans, toResult(plan))
	}
	return r
}
