// Package lag implements `mirrorctl lag`: replication lag per remote
// partition, heartbeat age per flow and checkpoint age and failover re-reads
// per consumer group, with thresholds that make it exit 3 for cron jobs and
// CI gates, and a --watch mode.
//
// The measuring is package lag at the top of the module (lag.Read,
// lag.Evaluate); this package parses flags, picks the flows and renders.
package lag

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	lagengine "github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Options are the dependencies and flags of `mirrorctl lag`.
type Options struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	Now     func() time.Time
	Logger  *slog.Logger

	// Source and Target are --source/--target; both empty means every
	// enabled flow.
	Source, Target string
	Groups         []string // --group, repeatable
	Watch          bool
	Interval       time.Duration // --interval, default 2s
	// Count is --count: stop --watch after this many refreshes (0: until
	// interrupted); the exit code then follows the last refresh.
	Count int

	// Thresholds; a zero or negative value is off (MaxRecords: -1 off).
	MaxLatency time.Duration
	MaxRecords int64
	StaleAfter time.Duration

	// FetchTimeout bounds the read of the oldest uncopied records and of
	// the heartbeats; default 10s.
	FetchTimeout time.Duration
}

// Result is the JSON document of `mirrorctl lag -o json` (one per line
// with --watch).
type Result struct {
	output.Envelope
	// InternalTopics are the progress, offset-syncs and heartbeats topics
	// read, per flow (replicate.InternalTopic).
	InternalTopics []replicate.InternalTopic `json:"internal_topics"`
	Flows          []lagengine.FlowLag       `json:"flows"`
	Breaches       []lagengine.Breach        `json:"breaches"`
}

// NewCmdLag returns `mirrorctl lag`. If runF is non-nil it is called with
// the options instead of running (tests).
func NewCmdLag(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{
		IO: f.IO, Output: f.Output, Config: f.Config, Now: f.Now, Logger: f.Logger,
		Clients: func() (replicate.Clients, error) { return f.Kafka() },
	}
	cmd := &cobra.Command{
		Use:   "lag [--source <alias> --target <alias>] [--group <id>]... [--watch [--interval 2s]] [--max-latency DUR] [--max-records N] [--stale-after DUR]",
		Short: "Show replication and checkpoint lag; exit 3 over a threshold or on a stopped partition",
		Long: "For every replicated partition of each enabled flow (or the one chosen with\n" +
			"--source/--target): the source end offset, the last replicated source offset,\n" +
			"records behind, time behind (age of the oldest source record not yet on the\n" +
			"target; 0 when caught up) and the target end offset. The replicated offset\n" +
			"comes from mirrorctl's progress topic where mirrorctl replicates (from =\n" +
			"progress), else from the newest MM2 offset sync plus the records the target\n" +
			"holds after it (from = offset-syncs); where MM2's Connect source offsets are\n" +
			"ahead of that progress (the flow handed back with mm2 handoff), from them\n" +
			"(from = mm2-offsets). Per flow: the age of its newest\n" +
			"heartbeat. Per group (--group, or every group with checkpoints): the age of\n" +
			"its newest checkpoint, and how many records a failover now would re-read: the\n" +
			"group's commits since the checkpoint plus the slack of MM2's conservative\n" +
			"translation (an upper estimate; `failover` computes the exact offsets).\n\n" +
			"Records behind are what was not copied and the source still holds: from\n" +
			"where a stopped partition stopped, and for a source topic deleted and\n" +
			"created again since its progress was written (state recreated) every record\n" +
			"of the new topic. A stopped partition (a loss event stopped it, or its source\n" +
			"topic was recreated and mirrorctl.source.recreated is not copy-from-start)\n" +
			"copies nothing until an operator acts: it is a breach whatever the\n" +
			"thresholds (check \"stopped\" in JSON, \"stopped\" in its status), said on\n" +
			"stderr, and lag exits 3.\n\n" +
			"Thresholds: time behind over --max-latency, records behind over\n" +
			"--max-records, a heartbeat older than --stale-after (or missing), or a\n" +
			"group checkpoint that is not current (it matches neither the group's source\n" +
			"commit nor a move of it less than --stale-after ago; an idle group never\n" +
			"breaches) is a breach: it is marked, listed under \"breaches\" in JSON, and the\n" +
			"exit code is 3.\n\n" +
			"--watch refreshes every --interval: redrawn in place on a terminal, one JSON\n" +
			"document per line (JSON Lines) otherwise or with -o json. --count N stops\n" +
			"after N refreshes, so a CI gate can wait for lag to settle: it exits 3 only\n" +
			"if the last refresh breached.\n\n" +
			"EXIT STATUS\n\n" +
			"  0    no threshold breached (or none given) and no partition stopped\n" +
			"  1    a cluster could not be read\n" +
			"  2    bad flags or an invalid mm2.properties, also two aliases of one\n" +
			"       cluster (same cluster ID), as replicate refuses them\n" +
			"  3    a threshold was breached or a partition is stopped (with --watch: in\n" +
			"       the last refresh), or a --group has no checkpoint in the flow (unknown,\n" +
			"       or not checkpointed yet); when stdout is not a terminal, stderr names\n" +
			"       each breach (flow, subject, value and limit)\n" +
			"  130  interrupted",
		Example: "$ mirrorctl lag -c mm2.properties\n" +
			"$ mirrorctl lag --source us-east --target eu-west --max-latency 30s --stale-after 2m -o json\n" +
			"$ mirrorctl lag --group billing --watch --interval 5s\n" +
			"$ mirrorctl lag --watch --interval 10s --count 6 --max-latency 30s   # settle for a minute, then gate",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("max-records") {
				opts.MaxRecords = -1
			} else if opts.MaxRecords < 0 {
				return cmdutil.FlagErrorf("--max-records %d: must be 0 or more", opts.MaxRecords)
			}
			for _, d := range []struct {
				name string
				v    time.Duration
			}{{"max-latency", opts.MaxLatency}, {"stale-after", opts.StaleAfter}} {
				if cmd.Flags().Changed(d.name) && d.v <= 0 {
					return cmdutil.FlagErrorf("--%s %s: must be positive", d.name, d.v)
				}
			}
			if opts.Interval <= 0 {
				return cmdutil.FlagErrorf("--interval %s: must be positive", opts.Interval)
			}
			if !opts.Watch && (cmd.Flags().Changed("interval") || opts.Count > 0) {
				return cmdutil.FlagErrorf("--interval and --count need --watch")
			}
			if runF != nil {
				return runF(opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Source, "source", "", "Source cluster `alias` of the flow")
	fl.StringVar(&opts.Target, "target", "", "Target cluster `alias` of the flow")
	fl.StringArrayVar(&opts.Groups, "group", nil, "Consumer `group` to report (repeatable; default: every group with checkpoints)")
	fl.BoolVar(&opts.Watch, "watch", false, "Refresh until interrupted")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "Refresh `interval` for --watch")
	fl.IntVar(&opts.Count, "count", 0, "Stop --watch after `N` refreshes; the exit code is the last refresh's (3 if it breached)")
	fl.DurationVar(&opts.MaxLatency, "max-latency", 0, "Breach when a partition's time behind exceeds `duration`")
	fl.Int64Var(&opts.MaxRecords, "max-records", 0, "Breach when a partition is more than `N` records behind")
	fl.DurationVar(&opts.StaleAfter, "stale-after", 0, "Breach when a heartbeat is older than `duration`, or a group's checkpoint is missing or not current (idle groups never breach)")
	return cmd
}

// Run collects and prints the lag once, or repeatedly with Watch. It
// returns cmdutil.ErrCheckFailed (exit 3) when the (last) report has a
// breach.
func Run(ctx context.Context, opts *Options) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.SummarizeWarnings(opts.IO, cfg)
	}
	if err != nil {
		return err
	}
	flows, err := cmdutil.SelectFlows(cfg, opts.Source, opts.Target, false)
	if err != nil {
		return err
	}
	clients, err := opts.Clients()
	if err != nil {
		return err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = lagengine.DefaultFetchTimeout
	}
	// Two aliases of one cluster are refused as replicate refuses them; the
	// look-up runs beside the first collection so a cluster that does not
	// answer costs no extra wait.
	var aliases []string
	for _, f := range flows {
		aliases = append(aliases, f.Source, f.Target)
	}
	internal := []replicate.InternalTopic{}
	for _, f := range flows {
		internal = append(internal, cmdutil.InternalTopics(ctx, opts.IO, clients, f, "progress", "offset-syncs", "heartbeats")...)
	}
	idCheck := make(chan error, 1)
	go func() { idCheck <- cmdutil.CheckOneCluster(ctx, cfg, clients, aliases...) }()
	oneCluster := func() error {
		if idCheck == nil {
			return nil
		}
		err := <-idCheck
		idCheck = nil
		return err
	}
	if !opts.Watch {
		res, err := Collect(ctx, opts, clients, flows)
		if cerr := oneCluster(); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		res.InternalTopics = internal
		warnSourceDown(opts, res)
		reportStopped(opts, res)
		if opts.Output() == output.FormatJSON {
			if err := writeResultJSON(opts.IO.Out, res); err != nil {
				return err
			}
		} else if err := renderTables(opts.IO.Out, opts, res); err != nil {
			return err
		}
		reportBreaches(opts, res)
		if unknownGroups(opts, res) {
			return cmdutil.ErrCheckFailed
		}
		return exitFor(res)
	}
	jsonLines := opts.Output() == output.FormatJSON || !opts.IO.IsStdoutTTY()
	t := time.NewTicker(opts.Interval)
	defer t.Stop()
	for i := 1; ; i++ {
		res, err := Collect(ctx, opts, clients, flows)
		if cerr := oneCluster(); cerr != nil {
			return cerr
		}
		if err != nil {
			return err
		}
		res.InternalTopics = internal
		if jsonLines {
			err = output.WriteJSONLine(opts.IO.Out, res)
		} else {
			// Clear the screen and home the cursor, then draw.
			fmt.Fprint(opts.IO.Out, "\x1b[H\x1b[2J")
			fmt.Fprintf(opts.IO.Out, "mirrorctl lag — every %s — %s\n\n", opts.Interval, opts.Now().Format(time.TimeOnly))
			err = renderTables(opts.IO.Out, opts, res)
		}
		if err != nil {
			return err
		}
		if opts.Count > 0 && i >= opts.Count {
			return exitFor(res)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// warnSourceDown says, per flow whose source did not answer, which figures
// are unknown and where the others come from.
func warnSourceDown(opts *Options, res Result) {
	for _, f := range res.Flows {
		if f.SourceError != "" {
			cmdutil.Warnf(opts.IO, "flow %s->%s: %s; its end offsets, records and time behind, group commits and members are unknown, "+
				"heartbeat and checkpoint ages are read from %s", f.Source, f.Target, f.SourceError, f.Target)
		}
	}
}

// reportStopped writes to stderr, per stopped partition, that it copies
// nothing more, how much is behind and why: lag exits 3 for it whatever
// the thresholds (lag.CheckStopped).
func reportStopped(opts *Options, res Result) {
	for _, b := range res.Breaches {
		if b.Check != lagengine.CheckStopped {
			continue
		}
		behind := "unknown"
		if b.Value >= 0 {
			behind = strconv.FormatInt(b.Value, 10)
		}
		cmdutil.Errorf(opts.IO, "flow %s: %s is stopped, %s records behind (%s); it copies nothing until an operator acts, so lag exits 3", b.Flow, b.Subject, behind, b.Reason)
	}
}

// maxBreachLines is how many threshold breaches reportBreaches names.
const maxBreachLines = 10

// reportBreaches writes to stderr, when stdout is not a terminal, each
// threshold breach (at most maxBreachLines, then how many more; stopped
// partitions are reportStopped's): a script that keeps stdout for the data
// still logs why lag exits 3. On a terminal the tables end with the count.
func reportBreaches(opts *Options, res Result) {
	if opts.IO.IsStdoutTTY() {
		return
	}
	n := 0
	for _, b := range res.Breaches {
		if b.Check == lagengine.CheckStopped {
			continue
		}
		if n++; n > maxBreachLines {
			continue
		}
		unit := " ms"
		if b.Check == lagengine.CheckMaxRecords {
			unit = " records"
		}
		value := strconv.FormatInt(b.Value, 10) + unit
		if b.Value < 0 {
			value = "unknown"
		}
		cmdutil.Errorf(opts.IO, "flow %s: %s breaches --%s: %s, limit %d%s", b.Flow, b.Subject, b.Check, value, b.Limit, unit)
	}
	if n > maxBreachLines {
		cmdutil.Errorf(opts.IO, "%s more", cmdutil.Plural(n-maxBreachLines, "threshold breach", "threshold breaches"))
	}
}

func exitFor(res Result) error {
	if len(res.Breaches) > 0 {
		return cmdutil.ErrCheckFailed
	}
	return nil
}

// unknownGroups writes to stderr, and reports, each --group that has no
// checkpoint in a reported flow: a typo, a group that does not exist, or
// one the mirror has not checkpointed yet. lag cannot vouch for it, so it
// exits 3.
func unknownGroups(opts *Options, res Result) bool {
	bad := false
	for _, fl := range res.Flows {
		for _, g := range fl.Groups {
			if g.CheckpointAgeMs == nil {
				cmdutil.Errorf(opts.IO, "group %s has no checkpoint in flow %s->%s (unknown group, or not checkpointed yet)", g.Group, fl.Source, fl.Target)
				bad = true
			}
		}
	}
	return bad && len(opts.Groups) > 0
}

// Collect reads every flow's lag at opts.Now() (lag.Read) and evaluates the
// thresholds (lag.Evaluate). Errors name the flow, cluster and topic that
// could not be read.
func Collect(ctx context.Context, opts *Options, clients replicate.Clients, flows []replicate.FlowConfig) (Result, error) {
	res := Result{Envelope: output.NewEnvelope(), InternalTopics: []replicate.InternalTopic{}, Flows: []lagengine.FlowLag{}, Breaches: []lagengine.Breach{}}
	ro := lagengine.Options{Now: opts.Now(), Groups: opts.Groups, FetchTimeout: opts.FetchTimeout}
	th := lagengine.Thresholds{MaxLatency: opts.MaxLatency, MaxRecords: opts.MaxRecords, StaleAfter: opts.StaleAfter}
	for _, fc := range flows {
		fl, err := lagengine.Read(ctx, clients, fc, ro)
		if err != nil {
			return res, err
		}
		res.Breaches = append(res.Breaches, lagengine.Evaluate(fc, &fl, th)...)
		res.Flows = append(res.Flows, fl)
	}
	sort.SliceStable(res.Flows, func(i, j int) bool {
		return res.Flows[i].Source+"->"+res.Flows[i].Target < res.Flows[j].Source+"->"+res.Flows[j].Target
	})
	return res, nil
}

// partStatus is a partition's status cell: its loss state when it has one
// (stopped, gap, recreated, ...: lag.PartitionLag.State; "recreated,
// stopped" for a recreated source topic the mirror stops at), with BREACH
// after it when it breached (a stopped partition always does); else ok or
// BREACH.
func partStatus(p lagengine.PartitionLag, breach string) string {
	if p.State == "" || p.State == lagengine.StateOK {
		return breach
	}
	st := p.State
	if p.Stopped && st != lagengine.StateStopped {
		st += ", stopped" // a recreated source topic the mirror stops at
	}
	if p.Breach {
		return st + ", BREACH"
	}
	return st
}

// groupStatus is a group's status cell: "no checkpoint" for a group the
// flow has no checkpoint of (an unknown group, or one not checkpointed yet:
// lag exits 3 for it, see unknownGroups), with BREACH after it when
// --stale-after breached too; else ok or BREACH.
func groupStatus(g lagengine.GroupLag, breach string) string {
	if g.CheckpointAgeMs != nil {
		return breach
	}
	if g.Breach {
		return "no checkpoint, BREACH"
	}
	return "no checkpoint"
}

func msCell(v *int64) string {
	if v == nil {
		return "-"
	}
	return output.Duration(time.Duration(*v) * time.Millisecond)
}

// renderTables prints three tables: partitions, flows (heartbeats), groups.
// On a terminal each has a title and breaches are red, healthy rows green.
func renderTables(w io.Writer, opts *Options, res Result) error {
	ios, format := opts.IO, opts.Output()
	st := output.NewStyles(ios)
	tty := ios.IsStdoutTTY() && format == output.FormatTable
	// Plain words: the table colours its status column (output.StatusTone)
	// and escapes every cell, so a pre-coloured cell would print its codes.
	status := func(breach bool) string {
		if breach {
			return "BREACH"
		}
		return "ok"
	}
	breachedHB := map[string]bool{}
	for _, b := range res.Breaches {
		if b.Subject == "heartbeat" {
			breachedHB[b.Flow] = true
		}
	}
	pt := output.NewTable("flow", "topic", "partition", "source end", "replicated", "records behind", "time behind", "target end", "from", "status", "owner")
	// The owner (client-id[host:pid]@address) gives way like free text:
	// on a narrow terminal it moves under its row.
	pt.SetKind("owner", output.KindText)
	ft := output.NewTable("flow", "heartbeat age", "status", "leader", "members")
	gt := output.NewTable("flow", "group", "checkpoint age", "rereads on failover", "status")
	for _, f := range res.Flows {
		name := f.Source + "->" + f.Target
		for _, p := range f.Partitions {
			end, behind := output.Count(ios, p.SourceEndOffset), output.Count(ios, p.RecordsBehind)
			if p.SourceUnknown {
				end, behind = "unknown", "unknown"
			}
			pt.AddRow(name, p.Topic, strconv.Itoa(int(p.Partition)), end, strconv.FormatInt(p.ReplicatedOffset, 10),
				behind, msCell(p.TimeBehindMs), output.Count(ios, p.TargetEndOffset), p.From, partStatus(p, status(p.Breach)), p.Owner)
		}
		leader, members := "", strconv.Itoa(len(f.Members))
		if f.Leader != nil {
			leader = f.Leader.String()
		}
		if f.OwnershipError != "" {
			leader, members = "unknown", "unknown"
		}
		ft.AddRow(name, msCell(f.HeartbeatAgeMs), status(breachedHB[name]), leader, members)
		for _, g := range f.Groups {
			gt.AddRow(name, g.Group, msCell(g.CheckpointAgeMs), output.Count(ios, g.RereadsOnFailover), groupStatus(g, status(g.Breach)))
		}
	}
	sections := []struct {
		title string
		t     *output.Table
	}{{"Partitions", pt}, {"Flows", ft}, {"Groups", gt}}
	first := true
	for _, s := range sections {
		if s.t.Len() == 0 {
			continue
		}
		if !first {
			fmt.Fprintln(w)
		}
		first = false
		if tty {
			fmt.Fprintln(w, st.Bold(s.title))
		}
		if err := s.t.Render(ios, format); err != nil {
			return err
		}
	}
	if tty && len(res.Breaches) > 0 {
		fmt.Fprintf(w, "\n%s %s\n", st.FailureIcon(), cmdutil.Plural(len(res.Breaches), "threshold breach", "threshold breaches"))
	}
	return nil
}
