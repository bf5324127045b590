// Package replicate implements `mirrorctl replicate`, the mirror itself.
package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// ReplicateOptions are the dependencies and flags of `mirrorctl replicate`.
type ReplicateOptions struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	Logger  *slog.Logger

	Flows  []string // --flow A->B, repeatable; default: every enabled flow
	DryRun bool
	Once   bool
	// Timeout is --timeout: with Once, how long the run may copy before it
	// stops as if interrupted (position saved within the stop budget) and
	// fails naming the partitions short of their end; 0 is no limit.
	Timeout time.Duration
	// MetricsAddr is --metrics-addr: serve Prometheus metrics, /healthz,
	// /readyz and /status on this host:port while replicating; "" is off.
	MetricsAddr string
	// ResumeUnknown is --resume-unknown: what a partition with no known
	// resume point does when its remote partition already holds records
	// (overrides mirrorctl.resume.unknown); "" leaves the key's.
	ResumeUnknown string
	// IgnoreLiveMM2 is --ignore-live-mm2: start flows that MirrorMaker 2
	// still seems to run.
	IgnoreLiveMM2 bool
	// InstanceID is --instance-id: this process's group.instance.id
	// (overrides MIRRORCTL_INSTANCE_ID and mirrorctl.instance.id; "none"
	// is dynamic membership); "" chooses (chooseInstance).
	InstanceID string
	// StopBudget is --stop-budget (overrides mirrorctl.stop.budget.ms); 0
	// takes the key's.
	StopBudget time.Duration
	// SetStopBudget tells the process's watchdog the budget in force
	// (cmdutil.Factory.SetStopBudget); nil in tests.
	SetStopBudget func(time.Duration)
	// LookupEnv reads the environment (os.LookupEnv; tests pin it).
	LookupEnv func(string) (string, bool)
}

// NewCmdReplicate returns `mirrorctl replicate`. If runF is non-nil it is
// called with the options instead of runReplicate (tests).
func NewCmdReplicate(f *cmdutil.Factory, runF func(*ReplicateOptions) error) *cobra.Command {
	opts := &ReplicateOptions{
		IO: f.IO, Output: f.Output, Config: f.Config, Logger: f.Logger,
		Clients:       func() (replicate.Clients, error) { return f.Kafka() },
		SetStopBudget: f.SetStopBudget, LookupEnv: os.LookupEnv,
	}
	cmd := &cobra.Command{
		Use:   "replicate [--flow <source>-><target>]... [--dry-run | --once]",
		Short: "Mirror topics between clusters as MirrorMaker 2 does",
		Long: "Run every enabled flow of mm2.properties: create remote topics (named by the\n" +
			"replication policy, e.g. us-east.orders) with the source's partitions and\n" +
			"configs, copy records partition to partition with keys, values, headers and\n" +
			"timestamps unchanged, write MM2-format offset syncs and heartbeats, and keep\n" +
			"the copy position on the target so a restart resumes where it stopped.\n\n" +
			"--dry-run prints, per flow, the topics that would be created or grown and every\n" +
			"topic left out with its reason, and changes nothing. --once copies what the\n" +
			"sources hold now and exits. Otherwise it runs until interrupted, then flushes,\n" +
			"saves its position and leaves its groups within the stop budget\n" +
			"(--stop-budget, mirrorctl.stop.budget.ms, default 10s), whatever the brokers\n" +
			"do, naming what it could not finish.\n\n" +
			"Several processes with the same mm2.properties share each flow's partitions\n" +
			"through a consumer group on the source. Each joins it under a stable instance\n" +
			"id (static membership, --instance-id or mirrorctl.instance.id; by default the\n" +
			"host name and a slot number), so a process restarted after a crash takes its\n" +
			"partitions back at once instead of after session.timeout.ms.\n\n" +
			"EXIT STATUS\n\n" +
			"  0    done (--once, --dry-run) or stopped cleanly\n" +
			"  1    a flow could not run (network, broker, I/O; the error names the cause),\n" +
			"       refused to start (beside a live MM2, or where no resume point is known\n" +
			"       and the remote partition holds records), or --once did not finish\n" +
			"       within --timeout (the partitions short of their end are named)\n" +
			"  2    bad flags or an invalid mm2.properties, also two aliases of one cluster\n" +
			"       (same cluster ID), flows that would write one remote topic, an instance\n" +
			"       id a running process on the host holds, or exactly-once on a target\n" +
			"       without transactions\n" +
			"  3    records did not reach the target: a gap, a recreated topic, a record\n" +
			"       the target refused (its partition stopped), or a ring; each error\n" +
			"       names topic, partition and offsets\n" +
			"  130  interrupted; the position was saved",
		Example: "$ mirrorctl replicate -c mm2.properties --dry-run\n" +
			"$ mirrorctl replicate -c mm2.properties --once -o json\n" +
			"$ mirrorctl replicate -c mm2.properties --flow 'us-east->eu-west'",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.DryRun && opts.Once {
				return cmdutil.FlagErrorf("--dry-run and --once cannot be used together")
			}
			switch opts.ResumeUnknown {
			case "", replicate.UnknownRefuse, replicate.UnknownLogStart, replicate.UnknownLogEnd:
			default:
				return cmdutil.FlagErrorf("--resume-unknown %q: want refuse, log-start or log-end", opts.ResumeUnknown)
			}
			if cmd.Flags().Changed("timeout") && opts.Timeout != 0 {
				if !opts.Once {
					return cmdutil.FlagErrorf("--timeout needs --once (a continuous mirror runs until stopped)")
				}
				if opts.Timeout < 100*time.Millisecond {
					return cmdutil.FlagErrorf("--timeout %s: want at least 100ms, or 0 for no limit", opts.Timeout)
				}
			}
			if opts.StopBudget < 0 || cmd.Flags().Changed("stop-budget") && opts.StopBudget < 100*time.Millisecond {
				return cmdutil.FlagErrorf("--stop-budget %s: want at least 100ms", opts.StopBudget)
			}
			if runF != nil {
				return runF(opts)
			}
			return runReplicate(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Flows, "flow", nil, "Run only this `source->target` flow (repeatable)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "Print the topic plan per flow and change nothing")
	cmd.Flags().BoolVar(&opts.Once, "once", false, "Copy what the sources hold now, then exit")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 0, "With --once: stop after this `duration` (at least 100ms; position saved, as when interrupted) and exit 1 naming the partitions short of their end; 0, the default, is no limit")
	cmd.Flags().StringVar(&opts.ResumeUnknown, "resume-unknown", "", "For a partition with no progress, no MM2 offset and no offset sync whose remote partition holds records: refuse (do not start the flow), log-start (copy again) or log-end (skip what the source holds); default: mirrorctl.resume.unknown, else refuse")
	cmd.Flags().BoolVar(&opts.IgnoreLiveMM2, "ignore-live-mm2", false, "Start even when MirrorMaker 2 still seems to run the flow (Connect group members, fresh MM2 heartbeats)")
	cmd.Flags().StringVar(&opts.InstanceID, "instance-id", "", "This process's group.instance.id in the flows' groups (static membership); none for dynamic (default $MIRRORCTL_INSTANCE_ID, then mirrorctl.instance.id, then <hostname>-<slot>)")
	cmd.Flags().DurationVar(&opts.StopBudget, "stop-budget", 0, "Stop within this `duration` of SIGINT/SIGTERM, whatever the brokers do (default mirrorctl.stop.budget.ms, else 10s)")
	cmd.Flags().StringVar(&opts.MetricsAddr, "metrics-addr", "", "Serve Prometheus `host:port`/metrics (MM2's JMX-exporter names), /healthz, /readyz and /status, e.g. :9464")
	return cmd
}

// selectFlows returns the engine settings of the flows to run: the enabled
// flows (or those named by --flow), plus, without --flow, every other pair
// with heartbeats on, as MM2 runs a heartbeat herder for each.
func selectFlows(cfg *config.Config, names []string) ([]replicate.FlowConfig, error) {
	var out []replicate.FlowConfig
	if len(names) > 0 {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			var fl *config.Flow
			for _, f := range cfg.Flows {
				if f.Name() == n {
					fl = f
				}
			}
			if fl == nil {
				return nil, cmdutil.FlagErrorf("--flow %s: no such flow in %s (clusters: %v)", n, cfg.File, cfg.Clusters)
			}
			if !fl.Enabled {
				return nil, cmdutil.FlagErrorf("--flow %s: the flow is not enabled in %s (set %s.enabled = true)", n, cfg.File, n)
			}
			out = append(out, cmdutil.FlowConfig(cfg, fl))
		}
		return out, nil
	}
	for _, f := range cfg.Flows {
		if !f.Enabled && !f.Bool("emit.heartbeats.enabled") {
			continue
		}
		if !f.Enabled && !(hasBootstrap(cfg, f.Source) && hasBootstrap(cfg, f.Target)) {
			continue
		}
		out = append(out, cmdutil.FlowConfig(cfg, f))
	}
	enabled := 0
	for _, f := range out {
		if f.Enabled {
			enabled++
		}
	}
	if enabled == 0 {
		return nil, cmdutil.FlagErrorf("%s enables no flow: set <source>-><target>.enabled = true", cfg.File)
	}
	return out, nil
}

func hasBootstrap(cfg *config.Config, alias string) bool {
	cl, ok := cfg.Cluster(alias)
	return ok && len(cl.BootstrapServers()) > 0
}

// PlanResult is the JSON document of `replicate --dry-run -o json`.
type PlanResult struct {
	output.Envelope
	Flows []*replicate.Plan `json:"flows"`
	// Members says, per flow, which replicate processes run it now: the
	// members of its group with their partitions and the leader.
	Members []FlowMembers `json:"members"`
	// Resume says, per flow and partition, where a partition task would
	// resume now and from which source (progress, mm2-offsets, offset-sync,
	// log-start, log-end), with the records it would copy again or skip.
	Resume []FlowResume `json:"resume"`
	// LimitDifferences are the remote topics whose limits are stricter
	// than their source topic's (replicate.PlanLimits): a record the
	// source holds may be refused there, stopping its partition.
	LimitDifferences []replicate.LimitDifference `json:"limit_differences"`
	// TimestampRefusals are the runs of source records still to copy that
	// the remote topics' message.timestamp.before/after.max.ms would refuse
	// now (replicate.PlanTimestamps).
	TimestampRefusals []replicate.TimestampRefusal `json:"timestamp_refusals"`
	// InternalTopics are, per flow, the internal topics the run would read
	// and write, by name (replicate.InternalTopic).
	InternalTopics []replicate.InternalTopic `json:"internal_topics"`
	// ACLSync is, per flow with sync.topic.acls.enabled, what its topic ACL
	// sync would do now (replicate.PlanACLSync): the target bindings it
	// would create, every source binding it leaves out with the reason,
	// and the revoked bindings it would report or prune.
	ACLSync []FlowACLSync `json:"acl_sync"`
}

// FlowACLSync is one flow's topic ACL sync, planned or done, or why it is
// unknown.
type FlowACLSync = replicate.FlowACLSync

// FlowResume is one flow's resume points (replicate.PlanResume) and what
// was seen of a MirrorMaker 2 still running it, or why that is unknown.
type FlowResume struct {
	Flow       string                  `json:"flow"`
	Partitions []replicate.ResumePoint `json:"partitions"`
	MM2        *replicate.MM2Activity  `json:"mm2,omitempty"`
	Error      string                  `json:"error,omitempty"`
}

// FlowMembers is who runs one flow now (replicate.ReadOwnership), or why
// that is unknown.
type FlowMembers struct {
	Flow     string `json:"flow"`
	TasksMax int    `json:"tasks_max"`
	// Delivery is "exactly-once" or "at-least-once"; SourceIsolation
	// "read_committed" or "read_uncommitted" (replicate.FlowConfig).
	Delivery        string `json:"delivery"`
	SourceIsolation string `json:"source_isolation"`
	// TransactionalIDs is, in exactly-once mode, the pattern of the
	// transactional ids its tasks use: "<group>-<topic>-<partition>".
	TransactionalIDs string `json:"transactional_ids,omitempty"`
	replicate.Ownership
	Error string `json:"error,omitempty"`
}

// RunResult is the JSON document `replicate -o json` writes when it ends.
type RunResult struct {
	output.Envelope
	Topics []TopicResult `json:"topics"`
	// Groups lists, per flow, each checkpointed consumer group: partitions
	// with a checkpoint and the last sync.group.offsets outcome.
	Groups []replicate.GroupStats `json:"groups"`
	// Members says, per flow, who this process was in the flow's groups:
	// its client id and host, whether it led the flow, how many partition
	// tasks it ran and how often the assignment changed.
	Members []replicate.FlowStatus `json:"members"`
	// ACLSync is, per flow whose topic ACL sync ran in this process (its
	// leader), what the last sync did: the bindings it created, every
	// source binding left out with the reason, revoked and pruned ones.
	ACLSync []FlowACLSync `json:"acl_sync"`
	Errors  []string      `json:"errors"`
}

// TopicResult sums one replicated topic of a flow.
type TopicResult struct {
	Flow        string `json:"flow"`
	Topic       string `json:"topic"`
	RemoteTopic string `json:"remote_topic"`
	Partitions  int    `json:"partitions"`
	Records     int64  `json:"records"` // acknowledged by the target in this run
	Bytes       int64  `json:"bytes"`   // value bytes of those records
	Stopped     int    `json:"stopped_partitions"`
	// Skipped is the source offsets of the topic that were never copied,
	// in total since its first copy (replicate.PartitionStats.Skipped,
	// summed; kept in the progress topic), not only in this run: this
	// run's losses are in Errors, and make --once exit 3.
	Skipped int64 `json:"skipped"`
}

func runReplicate(ctx context.Context, opts *ReplicateOptions) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.PrintWarnings(opts.IO, cfg.Warnings)
	}
	if err != nil {
		return err
	}
	flows, err := selectFlows(cfg, opts.Flows)
	if err != nil {
		return err
	}
	if opts.ResumeUnknown != "" {
		for i := range flows {
			flows[i].MM2.WhenUnknown = opts.ResumeUnknown
		}
	}
	clients, err := opts.Clients()
	if err != nil {
		return err
	}
	if opts.DryRun {
		return dryRun(ctx, opts, flows, clients)
	}
	var obs replicate.Observer
	if opts.MetricsAddr != "" {
		mo := metrics.New(nil)
		mo.SetUnreachableGrace(unreachableGrace(cfg))
		srv, err := metrics.Listen(opts.MetricsAddr, mo)
		if err != nil {
			return err
		}
		defer func() {
			// Within the watchdog's grace after the stop budget
			// (internal/cli.Main): a scrape in progress gets a second.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_ = srv.Close(cctx)
		}()
		if opts.Logger != nil {
			opts.Logger.Info("serving metrics", "addr", srv.Addr())
		}
		obs = mo
	}
	mo, _ := obs.(*metrics.Observer)
	// Continuous replicate on a terminal keeps a live status line on
	// stderr (not with -o json: scripts read the document); log records
	// and warnings erase it while they are written
	// (output.AroundStatusLine).
	var hwms func() func(replicate.PartitionStats) int64
	if !opts.Once && opts.IO.IsStderrTTY() && opts.Output() != output.FormatJSON {
		if mo != nil {
			hwms = func() func(replicate.PartitionStats) int64 { return metricsHighWatermarks(mo) }
		} else {
			h := newHWMObserver()
			obs = h
			hwms = func() func(replicate.PartitionStats) int64 { return h.highWatermark }
		}
	}
	budget := stopBudget(opts, cfg)
	if opts.SetStopBudget != nil {
		opts.SetStopBudget(budget)
	}
	inst, err := chooseInstance(opts.InstanceID, cfg, flows, opts.LookupEnv)
	if err != nil {
		return err
	}
	defer inst.release()
	if inst.note != "" {
		cmdutil.Warnf(opts.IO, "static membership off: %s; a process restarted after a crash waits out session.timeout.ms for its partitions. Set %s (or --instance-id) to one id per process", inst.note, config.KeyInstanceID)
	}
	m, err := replicate.New(replicate.Options{Flows: flows, Clients: clients, Logger: opts.Logger, Once: opts.Once, Observer: obs,
		IgnoreLiveMM2: opts.IgnoreLiveMM2, StopBudget: flowsBudget(budget), InstanceID: inst.id})
	if err != nil {
		return err
	}
	if mo != nil {
		mo.SetMembership(m.Status)
	}
	stopProgress := func() {}
	switch {
	case opts.Once:
		stopProgress = onceProgress(ctx, opts, m)
	case hwms != nil:
		stopProgress = liveStatus(ctx, output.NewStatusLine(opts.IO), m, hwms)
	}
	runCtx := ctx
	if opts.Once && opts.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, errOnceTimeout)
		defer cancel()
	}
	runErr := m.Run(runCtx)
	stopProgress()
	timedOut := ctx.Err() == nil && errors.Is(context.Cause(runCtx), errOnceTimeout)
	if timedOut {
		runErr = errors.Join(onceTimeoutError(opts.Timeout, m.Stats()), runErr)
	}
	if cerr := identityConfigError(cfg, runErr); cerr != nil {
		return cerr // refused before anything ran: nothing to render
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = ctx.Err() // interrupted: render must not print a success mark
	}
	if rerr := render(opts, m.Stats(), m.GroupStats(), m.Status(), m.ACLSyncs(), runErr); rerr != nil {
		return rerr
	}
	if ctx.Err() != nil {
		if opts.IO.IsStderrTTY() {
			fmt.Fprintln(opts.IO.ErrOut, "stopped: position saved on the target; the next run resumes there")
		}
		return ctx.Err() // interrupted: exit 130 after the position was saved
	}
	if timedOut {
		return runErr // exit 1: the run did less than asked, for want of time
	}
	if lossOnly(runErr) {
		// Records that will not reach the target (each error names its
		// topic, partition and offsets): the run did less than asked.
		return &cmdutil.CheckFailedError{Err: runErr}
	}
	return runErr
}

// errOnceTimeout is the cause of a --once run's context when --timeout
// ends it.
var errOnceTimeout = errors.New("--once timeout")

// onceTimeoutError says that a --once run stopped at its --timeout and
// names the partitions this process copied short of their end offset at the
// run's start (source offsets acknowledged against that end), at most ten.
// Partitions that never ran here are left out: their owner reports them.
func onceTimeoutError(timeout time.Duration, stats []replicate.PartitionStats) error {
	var short []string // in stats' order: flow, topic, partition (Mirror.Stats)
	for _, s := range stats {
		if s.End < 0 || s.State == replicate.TaskElsewhere {
			continue
		}
		if at := max(s.Acked, s.Start); at < s.End {
			short = append(short, fmt.Sprintf("%s %s[%d] at %d of %d", s.Flow, s.Topic, s.Partition, at, s.End))
		}
	}
	msg := fmt.Sprintf("--once did not finish within --timeout %s", timeout)
	switch n := len(short); {
	case n == 0:
		msg += " (every partition of this process reached its end; the run was still writing its progress, offset syncs or checkpoints)"
	case n > 10:
		msg += fmt.Sprintf(": %d partitions short of their end: %s and %d more", n, strings.Join(short[:10], ", "), n-10)
	default:
		msg += fmt.Sprintf(": %s short of their end: %s", cmdutil.Plural(n, "partition", "partitions"), strings.Join(short, ", "))
	}
	return errors.New(msg + "; the position was saved, the next run resumes there")
}

// stopBudget is --stop-budget, else mirrorctl.stop.budget.ms (validated by
// config.Load), else replicate.DefaultStopBudget.
func stopBudget(opts *ReplicateOptions, cfg *config.Config) time.Duration {
	if opts.StopBudget > 0 {
		return opts.StopBudget
	}
	if v, _, ok := cfg.Process(config.KeyStopBudget); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return replicate.DefaultStopBudget
}

// unreachableGrace is mirrorctl.health.unreachable.grace.ms (validated by
// config.Load), else metrics.DefaultUnreachableGrace: how long a cluster may
// be unreachable before /readyz answers 503.
func unreachableGrace(cfg *config.Config) time.Duration {
	if v, _, ok := cfg.Process(config.KeyUnreachableGrace); ok {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return metrics.DefaultUnreachableGrace
}

// flowsBudget is the part of the process's stop budget its flows get: the
// rest (up to a second, a fifth of a short budget) is the report and the
// clients' close, so that the process ends within the budget itself
// (internal/cli.Main exits at it whatever still runs).
func flowsBudget(budget time.Duration) time.Duration {
	return budget - min(time.Second, budget/5)
}

// isLoss reports whether err is a loss event or a refused record.
func isLoss(err error) bool {
	var rerr *replicate.RecordError
	var lerr *replicate.LossEvent
	return errors.As(err, &rerr) || errors.As(err, &lerr)
}

// lossOnly reports whether err is non-nil and every error joined in it is a
// loss event or a refused record, so the exit is 3 (a check failed), not 1.
func lossOnly(err error) bool {
	errs := unjoin(err)
	for _, e := range errs {
		if !isLoss(e) {
			return false
		}
	}
	return len(errs) > 0
}

// onceProgress draws --once's progress bar on a terminal's stderr (records
// acknowledged against what this process had to copy, from the partitions'
// resume points to their end offsets at start) until the returned func is
// called. Off the terminal it draws nothing.
func onceProgress(ctx context.Context, opts *ReplicateOptions, m *replicate.Mirror) func() {
	cp := output.NewCopyProgress(opts.IO)
	if !cp.Enabled() {
		// Every partition's stats 5 times a second cost a tenth of the
		// CPU of a --once run at 10,000 partitions, for nothing.
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			var st output.CopyStatus
			for _, s := range m.Stats() {
				st.Records += s.Records
				st.Bytes += s.Bytes
				if s.Start >= 0 && s.End > s.Start {
					st.Total += s.End - s.Start
				}
				if s.Error != "" {
					st.Stopped++
				}
			}
			cp.Update(st)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done; cp.Stop() }
}

func dryRun(ctx context.Context, opts *ReplicateOptions, flows []replicate.FlowConfig, clients replicate.Clients) error {
	res := PlanResult{Envelope: output.NewEnvelope(), Flows: []*replicate.Plan{}, Members: []FlowMembers{}, Resume: []FlowResume{}, LimitDifferences: []replicate.LimitDifference{},
		InternalTopics: []replicate.InternalTopic{}, TimestampRefusals: []replicate.TimestampRefusal{}, ACLSync: []FlowACLSync{}}
	cfg, err := opts.Config()
	if err != nil {
		return err
	}
	cmdutil.PrintNotes(opts.IO, cfg.Notes)
	// What a run would refuse, a dry run refuses too.
	if cerr := identityConfigError(cfg, replicate.CheckIdentities(ctx, clients, flows)); cerr != nil {
		return cerr
	}
	for _, f := range flows {
		if !f.Enabled {
			continue
		}
		src, err := clients.Admin(f.Source)
		if err != nil {
			return err
		}
		tgt, err := clients.Admin(f.Target)
		if err != nil {
			return err
		}
		if f.ExactlyOnce {
			if err := replicate.CheckTransactions(ctx, f, tgt); err != nil {
				return err
			}
		}
		plan, err := replicate.PlanFlow(ctx, f, src, tgt)
		if err != nil {
			return err
		}
		res.Flows = append(res.Flows, plan)
		res.InternalTopics = append(res.InternalTopics, cmdutil.InternalTopics(ctx, opts.IO, clients, f)...)
		diffs, err := replicate.PlanLimits(ctx, plan, src, tgt)
		if err != nil {
			cmdutil.Warnf(opts.IO, "flow %s: topic limits not compared: %v", f.Name(), err)
		}
		res.LimitDifferences = append(res.LimitDifferences, diffs...)
		if f.SyncTopicACLs {
			res.ACLSync = append(res.ACLSync, planACLSync(ctx, f, clients, src, tgt))
		}
		fm := FlowMembers{Flow: f.Name(), TasksMax: f.TasksMax, Delivery: f.Delivery(), SourceIsolation: f.SourceIsolation()}
		if f.ExactlyOnce {
			fm.TransactionalIDs = f.GroupID + "-<topic>-<partition>"
		}
		if fm.Ownership, err = replicate.ReadOwnership(ctx, src, tgt, f); err != nil {
			fm.Error = err.Error()
		}
		res.Members = append(res.Members, fm)
		fr := FlowResume{Flow: f.Name(), Partitions: []replicate.ResumePoint{}}
		if fr.Partitions, err = replicate.PlanResume(ctx, f, clients, plan); err != nil {
			fr.Error = err.Error()
		}
		refusals, err := replicate.PlanTimestamps(ctx, plan, src, tgt, fr.Partitions, time.Now())
		if err != nil {
			cmdutil.Warnf(opts.IO, "flow %s: source timestamps not compared with the target's bounds: %v", f.Name(), err)
		}
		res.TimestampRefusals = append(res.TimestampRefusals, refusals...)
		var errs []string
		if fr.Error != "" {
			errs = append(errs, fr.Error)
		}
		if !opts.IgnoreLiveMM2 {
			act, err := replicate.DetectMM2(ctx, f, clients, nil)
			if err != nil {
				errs = append(errs, "cannot tell whether MirrorMaker 2 runs the flow: "+err.Error())
			}
			fr.MM2 = &act
		}
		fr.Error = strings.Join(errs, "; ")
		res.Resume = append(res.Resume, fr)
	}
	if opts.Output() == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	printACLSync(opts, res.ACLSync)
	for _, d := range res.LimitDifferences {
		cmdutil.Warnf(opts.IO, "%s -> %s: %s is %s on the target, %s on the source: %s", d.Topic, d.RemoteTopic, d.Key, d.Target, d.Source, d.Effect)
	}
	for _, r := range res.TimestampRefusals {
		what := "older than"
		if r.Key == "message.timestamp.after.max.ms" {
			what = "ahead of now by more than"
		}
		cmdutil.Warnf(opts.IO, "%s[%d] -> %s: source offsets %d to %d (%s) have timestamps %s %s = %d ms of the remote topic: the target refuses them, and the partition stops at offset %d "+
			"(raise the limit on %s, or exclude the topic)", r.Topic, r.Partition, r.RemoteTopic, r.From, r.To-1, cmdutil.Plural(int(r.Count), "record", "records"),
			what, r.Key, r.Limit, r.From, r.RemoteTopic)
	}
	// Who runs each flow now: a process started on this file joins them
	// (or waits as a standby at tasks.max).
	for _, fm := range res.Members {
		if fm.Delivery == replicate.DeliveryExactlyOnce {
			cmdutil.Notef(opts.IO, "flow %s: exactly-once: each partition commits its copies and progress in one transaction on the target (transactional ids %s), source read %s",
				fm.Flow, fm.TransactionalIDs, fm.SourceIsolation)
		} else {
			cmdutil.Notef(opts.IO, "flow %s: at-least-once, source read %s", fm.Flow, fm.SourceIsolation)
		}
		switch {
		case fm.Error != "":
			cmdutil.Notef(opts.IO, "flow %s: group %s: members unknown: %s", fm.Flow, fm.Group, fm.Error)
		case len(fm.Members) == 0:
			cmdutil.Notef(opts.IO, "flow %s: group %s has no members: no replicate process runs this flow now (tasks.max %d)", fm.Flow, fm.Group, fm.TasksMax)
		default:
			leader := "none"
			if fm.Leader != nil {
				leader = fm.Leader.String()
			}
			cmdutil.Notef(opts.IO, "flow %s: group %s has %s running it (tasks.max %d), leader %s", fm.Flow, fm.Group,
				cmdutil.Plural(len(fm.Members), "process", "processes"), fm.TasksMax, leader)
			if fm.TasksMax > 0 && len(fm.Members) >= fm.TasksMax {
				cmdutil.Warnf(opts.IO, "flow %s: tasks.max %d admits %s copying and %d run now: a process started on this file waits as a standby and copies nothing "+
					"(MM2's tasks.max counts Connect tasks, mirrorctl's the processes that copy: set it to the number of processes)",
					fm.Flow, fm.TasksMax, cmdutil.Plural(fm.TasksMax, "process", "processes"), len(fm.Members))
			}
		}
	}
	for _, fr := range res.Resume {
		if fr.Error != "" {
			cmdutil.Warnf(opts.IO, "flow %s: %s", fr.Flow, fr.Error)
		}
		if fr.MM2 != nil && fr.MM2.Live() {
			cmdutil.Warnf(opts.IO, "flow %s: MirrorMaker 2 still runs it (%s): replicate refuses to start beside it (--ignore-live-mm2 to force)", fr.Flow, fr.MM2)
		}
		refused := 0
		for _, rp := range fr.Partitions {
			if rp.Error != "" {
				refused++
			}
		}
		if refused > 0 {
			cmdutil.Warnf(opts.IO, "flow %s: %s with no known resume point already hold records on %s: replicate refuses to start "+
				"without a choice (%s = log-start | log-end, or --resume-unknown)", fr.Flow, cmdutil.Plural(refused, "remote partition", "remote partitions"),
				flowTarget(flows, fr.Flow), replicate.KeyResumeUnknown)
		}
	}
	t := output.NewTable("flow", "topic", "remote topic", "action", "partitions", "target partitions", "reason")
	for _, p := range res.Flows {
		for _, tp := range p.Topics {
			t.AddRow(p.Flow, tp.Topic, tp.RemoteTopic, tp.Action, strconv.Itoa(int(tp.Partitions)), strconv.Itoa(int(tp.TargetPartitions)), tp.Reason)
		}
		for _, it := range p.Internal {
			action, note := "create-internal", "will be created"
			if it.Purpose == "acl-ledger" {
				// Created by the sync's first binding, not by the run.
				action, note = "internal", "not there yet: created when the ACL sync first creates a binding"
			}
			if it.Exists {
				action, note = "internal", "exists"
			}
			t.AddRow(p.Flow, it.Topic, "", action, "1", "", fmt.Sprintf("%s topic on %s (%s)", it.Purpose, it.Cluster, note))
		}
		for _, tp := range p.Topics {
			if tp.Note != "" {
				cmdutil.Notef(opts.IO, "flow %s: %s", p.Flow, tp.Note)
			}
		}
		if len(p.Replicated()) == 0 {
			fmt.Fprintf(opts.IO.ErrOut, "warning: flow %s: no topic on %s is replicated (%d listed); check the topics filter\n", p.Flow, p.Source, len(p.Topics))
		}
	}
	if err := t.Render(opts.IO, opts.Output()); err != nil {
		return err
	}
	if opts.Output() != output.FormatTable || !(opts.IO.IsStdoutTTY() || opts.IO.WideTables()) {
		// One table per document for tsv/csv and a plain pipe: -o json
		// carries every resume point, and --wide prints their table after
		// this one (as on a terminal); here a line per flow sums them up.
		for _, fr := range res.Resume {
			cmdutil.Notef(opts.IO, "flow %s: resume %s (per partition: --wide or -o json)", fr.Flow, resumeSummary(fr.Partitions))
		}
		return nil
	}
	// Where each partition task would resume, and what that copies again
	// or leaves behind.
	fmt.Fprintln(opts.IO.Out)
	rt := output.NewTable("flow", "topic", "partition", "resume at", "from", "copied again", "skipped", "note")
	for _, fr := range res.Resume {
		for _, rp := range fr.Partitions {
			again := strconv.FormatInt(rp.Recopy, 10)
			if rp.Recopy < 0 {
				again = "unknown"
			}
			at, from := strconv.FormatInt(rp.Offset, 10), rp.From
			if rp.Error != "" {
				at, from = "-", "refused"
			}
			rt.AddRow(fr.Flow, rp.Topic, strconv.Itoa(int(rp.Partition)), at, from, again, strconv.FormatInt(rp.Skip, 10), resumeNote(rp))
		}
	}
	return rt.Render(opts.IO, opts.Output())
}

// planACLSync is the flow's topic ACL sync as it would run now, read-only.
func planACLSync(ctx context.Context, f replicate.FlowConfig, clients replicate.Clients, src, tgt *kadm.Client) FlowACLSync {
	r, err := replicate.PlanACLSync(ctx, f, src, tgt, replicate.NewACLLedger(f, clients, true))
	return replicate.NewFlowACLSync(f.Name(), r, err)
}

// printACLSync says on stderr what each flow's topic ACL sync would do:
// every source binding left out with its reason, the bindings it would
// create, and the revoked ones it would report or prune.
func printACLSync(opts *ReplicateOptions, syncs []FlowACLSync) {
	for _, a := range syncs {
		if a.NoAuthorizer {
			cmdutil.Notef(opts.IO, "flow %s: topic ACL sync: %s has no authorizer, so there are no ACLs to sync", a.Flow, flowSource(a.Flow))
			continue
		}
		if a.Error != "" {
			cmdutil.Warnf(opts.IO, "flow %s: topic ACL sync: %s", a.Flow, a.Error)
			continue
		}
		for _, s := range a.Skipped {
			cmdutil.Notef(opts.IO, "flow %s: topic ACL binding not synced (%s): %s: %s", a.Flow, s.Reason, s.Binding, s.Detail)
		}
		cmdutil.Notef(opts.IO, "flow %s: topic ACL sync: %d target bindings from the source, %d to create", a.Flow, len(a.Planned), len(a.Created))
		if a.TrackingError != "" {
			cmdutil.Warnf(opts.IO, "flow %s: revoked topic ACLs cannot be tracked or pruned: %s", a.Flow, a.TrackingError)
		}
		for _, b := range a.Revoked {
			cmdutil.Warnf(opts.IO, "flow %s: revoked on the source, still on the target: %s (sync.topic.acls.prune = true removes it)", a.Flow, b)
		}
		for _, b := range a.Pruned {
			cmdutil.Warnf(opts.IO, "flow %s: revoked on the source, would be pruned from the target: %s", a.Flow, b)
		}
	}
}

// flowSource returns the source alias of the flow named "source->target".
func flowSource(flow string) string {
	src, _, _ := strings.Cut(flow, "->")
	return src
}

// resumeSummary counts resume points by source, and the records copied
// again and skipped: "4 partitions: 3 from mm2-offsets, 1 from progress; 12
// records copied again, 0 skipped".
func resumeSummary(rps []replicate.ResumePoint) string {
	by := map[string]int{}
	var again, skip int64
	unknown := false
	for _, rp := range rps {
		from := rp.From
		if rp.Error != "" {
			from = "refused"
		}
		by[from]++
		if rp.Recopy < 0 {
			unknown = true
		} else {
			again += rp.Recopy
		}
		skip += rp.Skip
	}
	var parts []string
	for _, from := range []string{replicate.ResumeProgress, replicate.ResumeMM2Offsets, replicate.ResumeOffsetSync, replicate.ResumeLogStart, replicate.ResumeLogEnd, "refused"} {
		if by[from] > 0 {
			parts = append(parts, fmt.Sprintf("%d from %s", by[from], from))
		}
	}
	againS := strconv.FormatInt(again, 10)
	if unknown {
		againS = "at least " + againS
	}
	return fmt.Sprintf("%s: %s; %s records copied again, %d skipped", cmdutil.Plural(len(rps), "partition", "partitions"),
		strings.Join(parts, ", "), againS, skip)
}

// resumeNote says briefly what stands behind a resume point.
func resumeNote(rp replicate.ResumePoint) string {
	switch rp.From {
	case replicate.ResumeProgress:
		return "mirrorctl progress"
	case replicate.ResumeMM2Offsets:
		return fmt.Sprintf("after MM2's last copied offset %d", rp.MM2Offset)
	case replicate.ResumeOffsetSync:
		return fmt.Sprintf("after the newest offset sync %d->%d", rp.SyncUpstream, rp.SyncDownstream)
	case replicate.ResumeLogEnd:
		return "log end: earlier records not copied"
	case replicate.ResumeLogStart:
		if rp.Recopy > 0 {
			return "log start: the remote partition gets its records again"
		}
		return ""
	}
	return fmt.Sprintf("remote partition holds %d records, nothing known", rp.RemoteEnd)
}

// flowTarget returns the target alias of the flow named name.
func flowTarget(flows []replicate.FlowConfig, name string) string {
	for _, f := range flows {
		if f.Name() == name {
			return f.Target
		}
	}
	return "the target"
}

func render(opts *ReplicateOptions, stats []replicate.PartitionStats, groups []replicate.GroupStats, members []replicate.FlowStatus,
	acls []FlowACLSync, runErr error) error {
	byTopic := map[[2]string]*TopicResult{}
	for _, s := range stats {
		k := [2]string{s.Flow, s.Topic}
		tr := byTopic[k]
		if tr == nil {
			tr = &TopicResult{Flow: s.Flow, Topic: s.Topic, RemoteTopic: s.RemoteTopic}
			byTopic[k] = tr
		}
		tr.Partitions++
		tr.Records += s.Records
		tr.Bytes += s.Bytes
		if s.Error != "" {
			tr.Stopped++
		}
		tr.Skipped += s.Skipped
	}
	res := RunResult{Envelope: output.NewEnvelope(), Topics: []TopicResult{}, Groups: groups, Members: members, ACLSync: acls, Errors: []string{}}
	if res.ACLSync == nil {
		res.ACLSync = []FlowACLSync{}
	}
	if res.Members == nil {
		res.Members = []replicate.FlowStatus{}
	}
	if res.Groups == nil {
		res.Groups = []replicate.GroupStats{}
	}
	for _, tr := range byTopic {
		res.Topics = append(res.Topics, *tr)
	}
	sort.Slice(res.Topics, func(i, j int) bool {
		a, b := res.Topics[i], res.Topics[j]
		if a.Flow != b.Flow {
			return a.Flow < b.Flow
		}
		return a.Topic < b.Topic
	})
	for _, e := range unjoin(runErr) {
		if isLoss(e) {
			res.Errors = append(res.Errors, e.Error())
		}
	}
	if opts.Output() == output.FormatJSON {
		return output.WriteJSON(opts.IO.Out, res)
	}
	t := output.NewTable("flow", "topic", "remote topic", "partitions", "records", "bytes", "stopped", "skipped")
	for _, tr := range res.Topics {
		t.AddRow(tr.Flow, tr.Topic, tr.RemoteTopic, strconv.Itoa(tr.Partitions), strconv.FormatInt(tr.Records, 10),
			strconv.FormatInt(tr.Bytes, 10), strconv.Itoa(tr.Stopped), strconv.FormatInt(tr.Skipped, 10))
	}
	if err := t.Render(opts.IO, opts.Output()); err != nil {
		return err
	}
	// Groups get a table of their own on a terminal and with --wide;
	// scripts read -o json.
	if len(res.Groups) > 0 && (opts.IO.IsStdoutTTY() || opts.IO.WideTables()) && opts.Output() == output.FormatTable {
		fmt.Fprintln(opts.IO.Out)
		gt := output.NewTable("flow", "group", "checkpoints", "offset sync", "committed", "error")
		for _, g := range res.Groups {
			gt.AddRow(g.Flow, g.Group, strconv.Itoa(g.Checkpoints), g.Sync, strconv.Itoa(g.Committed), g.Error)
		}
		if err := gt.Render(opts.IO, opts.Output()); err != nil {
			return err
		}
	}
	if opts.IO.IsStderrTTY() && runErr == nil {
		var n int64
		for _, tr := range res.Topics {
			n += tr.Records
		}
		st := output.NewStyles(opts.IO)
		fmt.Fprintf(opts.IO.ErrOut, "%s copied %s at %s\n", st.SuccessIcon(), cmdutil.Plural(int(n), "record", "records"), time.Now().Format(time.RFC3339))
	}
	return nil
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

// identityConfigError turns the engine's refusal to start, aliases of one
// cluster (replicate.ClusterAliasError) or flows that would write one remote
// topic (replicate.RemoteTopicConflictError), into config errors at the
// `clusters` line or the flow's enabled line (exit 2): the file, not the
// clusters, has to change. nil when err is neither.
func identityConfigError(cfg *config.Config, err error) error {
	var out []error
	for _, e := range unjoin(err) {
		var (
			ae *replicate.ClusterAliasError
			ce *replicate.RemoteTopicConflictError
		)
		switch {
		case errors.As(e, &ae):
			line := 0
			if cl, ok := cfg.Cluster(ae.Aliases[0]); ok {
				line = cl.Line
			}
			out = append(out, &config.Error{File: cfg.File, Line: line, Key: "clusters", Msg: ae.Error(), Err: ae})
		case errors.As(e, &ce):
			line, key := 0, ce.Flows[0]+".enabled"
			for _, fl := range cfg.Flows {
				if fl.Name() == ce.Flows[0] {
					line = fl.Line
				}
			}
			out = append(out, &config.Error{File: cfg.File, Line: line, Key: key, Msg: ce.Error(), Err: ce})
		}
	}
	return errors.Join(out...)
}
