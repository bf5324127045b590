// Package status implements `mirrorctl status`: the whole of each flow
// across every replicate process that runs it, read from Kafka (the group
// coordinators and the flow's internal topics), so nobody has to scrape
// each process's /status.
//
// The reading is package flowstatus at the top of the module
// (flowstatus.Read); this package parses flags, picks the flows and renders.
package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/flowstatus"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// Options are the dependencies and flags of `mirrorctl status`.
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
	// Timeout is --timeout: the whole read, every flow, ends by then
	// (default 30s).
	Timeout time.Duration
}

// Result is the JSON document of `mirrorctl status -o json`.
type Result struct {
	output.Envelope
	Flows []flowstatus.Flow `json:"flows"`
}

// DefaultTimeout is --timeout's default.
const DefaultTimeout = 30 * time.Second

// NewCmdStatus returns `mirrorctl status`. If runF is non-nil it is called
// with the options instead of running (tests).
func NewCmdStatus(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{
		IO: f.IO, Output: f.Output, Config: f.Config, Now: f.Now, Logger: f.Logger,
		Clients: func() (replicate.Clients, error) { return f.Kafka() },
	}
	cmd := &cobra.Command{
		Use:   "status [--source <alias> --target <alias>] [--timeout 30s]",
		Short: "Show who runs each flow across all replicate processes, read from Kafka",
		Long: "For each enabled flow (or the one chosen with --source/--target), read from\n" +
			"the clusters themselves, not from any one process:\n\n" +
			"  processes   every replicate process running the flow: its client id\n" +
			"              (client-id[host:pid]), host, instance id, role (copying: a\n" +
			"              member of the flow's group on the source; standby: only in\n" +
			"              the leader group on the target, waiting under tasks.max),\n" +
			"              whether it leads the flow, and the partitions it is assigned\n" +
			"  partitions  every partition the flow replicates: its owner, the position\n" +
			"              (next source offset to copy, from mirrorctl's progress topic\n" +
			"              on the target, or MM2's offsets where they say more), records\n" +
			"              behind the source end, when its progress was last written,\n" +
			"              and its state (stopped partitions say why)\n\n" +
			"The members and assignments come from the group coordinators\n" +
			"(DescribeGroups of mirrorctl.group.id on the source and <group>-leader on\n" +
			"the target); nothing is written. --wide adds the source topic, source end,\n" +
			"where the position comes from, owner instance ids and member ids.\n\n" +
			"EXIT STATUS\n\n" +
			"  0    every partition of each flow has an owner, a process leads, and no\n" +
			"       partition is stopped\n" +
			"  1    a cluster did not answer or a group could not be described (the\n" +
			"       owners are unknown, never shown as fine), or --timeout ran out\n" +
			"  2    bad flags or an invalid mm2.properties, also two aliases of one\n" +
			"       cluster (same cluster ID), as replicate refuses them\n" +
			"  3    a partition has no owner, the flow's group has no members, no\n" +
			"       process leads the flow, or a partition is stopped (each said on\n" +
			"       stderr, and under \"problems\" in JSON)\n" +
			"  130  interrupted",
		Example: "$ mirrorctl status -c mm2.properties\n" +
			"$ mirrorctl status --source us-east --target eu-west -o json\n" +
			"$ mirrorctl status --wide --timeout 10s",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Timeout <= 0 {
				return cmdutil.FlagErrorf("--timeout %s: must be positive", opts.Timeout)
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
	fl.DurationVar(&opts.Timeout, "timeout", DefaultTimeout, "Give up reading the clusters after `duration` (exit 1)")
	return cmd
}

// Run reads every chosen flow's status (flowstatus.Read) within
// opts.Timeout, prints it, and returns cmdutil.ErrCheckFailed (exit 3)
// when a flow has a problem, each said on stderr.
func Run(ctx context.Context, opts *Options) error {
	cfg, err := opts.Config()
	if cfg != nil {
		cmdutil.SummarizeWarnings(opts.IO, cfg)
	}
	if err != nil {
		return err
	}
	flows, err := cmdutil.SelectFlows(cfg, opts.Source, opts.Target, true)
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
	// Two aliases of one cluster are refused as replicate refuses them
	// (exit 2); the look-up runs beside the read.
	var aliases []string
	for _, f := range flows {
		aliases = append(aliases, f.Source, f.Target)
	}
	idCheck := make(chan error, 1)
	go func() { idCheck <- cmdutil.CheckOneCluster(ctx, cfg, clients, aliases...) }()
	res, err := Collect(ctx, opts, clients, flows)
	if cerr := <-idCheck; cerr != nil {
		return cerr
	}
	if err != nil {
		return err
	}
	if opts.Output() == output.FormatJSON {
		if err := output.WriteJSON(opts.IO.Out, res); err != nil {
			return err
		}
	} else if err := renderTables(opts.IO.Out, opts, res); err != nil {
		return err
	}
	bad := false
	for _, f := range res.Flows {
		for _, p := range f.Problems {
			cmdutil.Errorf(opts.IO, "flow %s->%s: %s", f.Source, f.Target, p)
			bad = true
		}
	}
	if bad {
		return cmdutil.ErrCheckFailed
	}
	return nil
}

// Collect reads each flow's status at opts.Now(), all of it within
// opts.Timeout. A flow that cannot be read fails the whole: its error
// names the flow and the cluster.
func Collect(ctx context.Context, opts *Options, clients replicate.Clients, flows []replicate.FlowConfig) (Result, error) {
	res := Result{Envelope: output.NewEnvelope(), Flows: []flowstatus.Flow{}}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ro := flowstatus.Options{Now: opts.Now(), FetchTimeout: min(timeout, 10*time.Second)}
	for _, fc := range flows {
		f, err := flowstatus.Read(tctx, clients, fc, ro)
		if err != nil {
			if ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
				return res, fmt.Errorf("status: gave up after --timeout %s reading flow %s: %w", timeout, fc.Name(), err)
			}
			return res, err
		}
		res.Flows = append(res.Flows, f)
	}
	sort.SliceStable(res.Flows, func(i, j int) bool {
		return res.Flows[i].Source+"->"+res.Flows[i].Target < res.Flows[j].Source+"->"+res.Flows[j].Target
	})
	return res, nil
}

// renderTables prints two tables, processes then partitions, all flows in
// each, sorted by flow and then by client id or topic and partition. On a
// terminal each has a title.
func renderTables(w io.Writer, opts *Options, res Result) error {
	ios, format := opts.IO, opts.Output()
	wide := ios.WideTables()
	procT := processTable(res, wide)
	partT := partitionTable(ios, res, wide, opts.Now())
	tty := ios.IsStdoutTTY() && format == output.FormatTable
	st := output.NewStyles(ios)
	for i, s := range []struct {
		title string
		t     *output.Table
	}{{"Processes", procT}, {"Partitions", partT}} {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if tty {
			fmt.Fprintln(w, st.Bold(s.title))
		}
		if err := s.t.Render(ios, format); err != nil {
			return err
		}
	}
	return nil
}

// processTable has one row per process and flow; a flow without any has a
// row saying so.
func processTable(res Result, wide bool) *output.Table {
	headers := []string{"flow", "process", "host", "instance", "role", "leader", "partitions", "assigned"}
	if wide {
		headers = append(headers, "member id", "leader member id")
	}
	t := output.NewTable(headers...)
	t.SetKind("process", output.KindIdentity)
	t.SetKind("assigned", output.KindText)
	for _, f := range res.Flows {
		name := f.Source + "->" + f.Target
		if len(f.Processes) == 0 {
			row := []string{name, "-", "", "", "none", "", "0", ""}
			if wide {
				row = append(row, "", "")
			}
			t.AddRow(row...)
			continue
		}
		for _, p := range f.Processes {
			leader := "no"
			if p.Leader {
				leader = "yes"
			}
			row := []string{name, p.ClientID, p.Host, p.InstanceID, p.Role, leader, strconv.Itoa(len(p.Partitions)), strings.Join(p.Partitions, " ")}
			if wide {
				row = append(row, p.MemberID, p.LeaderMemberID)
			}
			t.AddRow(row...)
		}
	}
	return t
}

// partitionTable has one row per replicated partition.
func partitionTable(ios *iostreams.IOStreams, res Result, wide bool, now time.Time) *output.Table {
	headers := []string{"flow", "topic", "partition", "owner", "position", "records behind", "last progress", "state"}
	if wide {
		headers = append(headers, "source topic", "source end", "from", "owner instance")
	}
	t := output.NewTable(headers...)
	t.SetKind("owner", output.KindIdentity)
	t.SetKind("state", output.KindText)
	for _, f := range res.Flows {
		name := f.Source + "->" + f.Target
		for _, p := range f.Partitions {
			owner := p.Owner
			if owner == "" {
				owner = "NONE"
			}
			state := p.State
			if p.Stopped && p.StopReason != "" {
				state = "stopped: " + p.StopReason
			}
			last := "-" // no progress written
			if p.ProgressTime != nil {
				last = output.Time(ios, *p.ProgressTime, now)
			}
			row := []string{name, p.Topic, strconv.Itoa(int(p.Partition)), owner, strconv.FormatInt(p.Position, 10),
				output.Count(ios, p.RecordsBehind), last, state}
			if wide {
				row = append(row, p.SourceTopic, output.Count(ios, p.SourceEndOffset), p.From, p.OwnerInstanceID)
			}
			t.AddRow(row...)
		}
	}
	return t
}
