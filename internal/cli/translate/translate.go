// Package translate implements `mirrorctl translate`: a consumer group's
// committed source offsets translated to the target cluster (package
// failover, checkpoint / exact / auto mode). It changes nothing.
package translate

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/failover"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// TranslateOptions are the dependencies and flags of `mirrorctl translate`.
type TranslateOptions struct {
	IO      *iostreams.IOStreams
	Output  func() output.Format
	Config  func() (*config.Config, error)
	Clients func() (replicate.Clients, error)
	Logger  *slog.Logger
	Now     func() time.Time // nil is time.Now

	Source, Target  string
	Groups          []string // --group, repeatable
	GroupsRE        string   // --groups
	Mode            string   // --mode auto|checkpoint|exact
	AllowEmpty      bool     // --allow-empty
	AllowOutOfRange bool     // --allow-out-of-range
}

// NewCmdTranslate returns `mirrorctl translate`. If runF is non-nil it is
// called with the options instead of the command's run function (tests).
func NewCmdTranslate(f *cmdutil.Factory, runF func(*TranslateOptions) error) *cobra.Command {
	opts := &TranslateOptions{IO: f.IO, Output: f.Output, Config: f.Config, Logger: f.Logger, Now: f.Now,
		Clients: func() (replicate.Clients, error) { return f.Kafka() }}
	cmd := &cobra.Command{
		Use:   "translate --source <alias> --target <alias> {--group <name>... | --groups <regex>} [--mode auto|checkpoint|exact]",
		Short: "Translate consumer-group offsets from the source cluster to the target",
		Long: "Print, per group and partition, the committed offset on the source and the\n" +
			"offset a consumer of the same group must resume from on the target.\n\n" +
			"checkpoint: the newest checkpoint in <source>.checkpoints.internal on the target,\n" +
			"  as MirrorMaker 2's RemoteClusterUtils.translateOffsets returns it; works while\n" +
			"  the source is down; may re-read records.\n" +
			"exact: from the nearest offset sync, the copy of the next record the group would\n" +
			"  read, matched by timestamp, key, value and headers; needs the source; works for\n" +
			"  topics a real MM2 replicates. When unsure it returns an earlier, safe offset\n" +
			"  and says why.\n" +
			"auto (default): exact where the source answers, checkpoint otherwise.\n\n" +
			"Each row names the mode that produced it, the offset sync it started from and\n" +
			"how many records a consumer would read again compared with exact. A null\n" +
			"target offset means there is no safe answer; the reason says why. Nothing is\n" +
			"changed.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  translated (rows without an answer carry a reason)\n" +
			"  1  a cluster could not be read\n" +
			"  2  bad flags or an invalid mm2.properties, also two aliases of one\n" +
			"     cluster (same cluster ID), as replicate refuses them\n" +
			"  3  a named group has no committed offset on the flow's topics (it may\n" +
			"     not exist; --allow-empty accepts this), a group's or a row's\n" +
			"     offsets could not be read (the row's error says why), or a row's\n" +
			"     target offset is not a position on the target: past the end of its\n" +
			"     partition (a bad checkpoint) or below its log start (--allow-out-of-range\n" +
			"     accepts this; the row's out_of_range says which)",
		Example: "$ mirrorctl translate --source us-east --target eu-west --group billing\n" +
			"$ mirrorctl translate --source us-east --target eu-west --groups 'billing-.*' --mode exact -o json",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(opts.Groups) == 0 && opts.GroupsRE == "" {
				return cmdutil.FlagErrorf("name the groups with --group (repeatable) or --groups <regex>")
			}
			if runF != nil {
				return runF(opts)
			}
			return runTranslate(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Source, "source", "", "Source cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringVar(&opts.Target, "target", "", "Target cluster `alias` of the flow (default: the config's one enabled flow)")
	fl.StringArrayVar(&opts.Groups, "group", nil, "Consumer group `name` (repeatable)")
	fl.StringVar(&opts.GroupsRE, "groups", "", "Consumer groups whose name matches this `regex` (whole name, RE2)")
	cmdutil.StringEnumFlag(cmd, fl, &opts.Mode, "mode", "", string(failover.ModeAuto), failover.Modes(), "Translation mode")
	fl.BoolVar(&opts.AllowEmpty, "allow-empty", false, "Exit 0 for a named group with no committed offset (it is still reported)")
	fl.BoolVar(&opts.AllowOutOfRange, "allow-out-of-range", false, "Exit 0 for rows whose target offset is outside the target partition (they are still reported)")
	return cmd
}

// Result is the JSON document of `translate -o json`.
type Result struct {
	output.Envelope
	Source string `json:"source"`
	Target string `json:"target"`
	// InternalTopics are the checkpoints and offset-syncs topics read, by
	// name (replicate.InternalTopic).
	InternalTopics []replicate.InternalTopic   `json:"internal_topics"`
	Groups         []failover.GroupTranslation `json:"groups"`
}

func runTranslate(ctx context.Context, opts *TranslateOptions) error {
	eng, cfg, groups, err := cmdutil.SetupFailover(ctx, cmdutil.FailoverSetup{Config: opts.Config, Clients: opts.Clients, Logger: opts.Logger, Now: opts.Now,
		IO: opts.IO, Source: opts.Source, Target: opts.Target, Groups: opts.Groups, GroupsRE: opts.GroupsRE})
	if err != nil {
		return err
	}
	res, err := eng.Translate(ctx, groups, failover.Mode(opts.Mode))
	if err != nil {
		return err
	}
	internal := []replicate.InternalTopic{}
	if src, tgt := eng.Flow(); cfg != nil {
		if fl, ok := cfg.Flow(src, tgt); ok {
			if clients, err := opts.Clients(); err == nil {
				internal = cmdutil.InternalTopics(ctx, opts.IO, clients, cmdutil.FlowConfig(cfg, fl), "checkpoints", "offset-syncs")
			}
		}
	}
	if res.SourceDown {
		cmdutil.Warnf(opts.IO, "source %s did not answer; rows come from checkpoints: %s", res.Source, res.SourceErr)
	}
	WarnEmpty(opts.IO, res)
	failed := Failed(opts.IO, res, opts.AllowEmpty, opts.AllowOutOfRange)
	if opts.Output() == output.FormatJSON {
		if err := output.WriteJSON(opts.IO.Out, Result{Envelope: output.NewEnvelope(), Source: res.Source, Target: res.Target, InternalTopics: internal, Groups: res.Groups}); err != nil {
			return err
		}
		if failed {
			return cmdutil.ErrCheckFailed
		}
		return nil
	}
	t := output.NewTable("group", "source topic", "topic", "partition", "source offset", "target offset", "mode", "sync", "rereads", "reason")
	for _, g := range res.Groups {
		for _, r := range g.Partitions {
			sync := ""
			if r.Sync != nil {
				sync = strconv.FormatInt(r.Sync.Upstream, 10) + "->" + strconv.FormatInt(r.Sync.Downstream, 10)
			}
			reason := r.Reason
			if r.OutOfRange != "" {
				reason = strings.TrimPrefix(reason+"; out of range: "+r.OutOfRange, "; ")
			}
			t.AddRow(g.Group, r.SourceTopic, r.Topic, strconv.Itoa(int(r.Partition)), cmdutil.Opt(r.SourceOffset), cmdutil.Opt(r.TargetOffset), string(r.Mode), sync, cmdutil.Opt(r.Rereads), reason)
		}
	}
	if err := t.Render(opts.IO, opts.Output()); err != nil {
		return err
	}
	if failed {
		return cmdutil.ErrCheckFailed
	}
	return nil
}

// Failed writes to stderr, and reports, what makes translate exit 3: a
// group whose commits could not be read, a row whose offsets could not be
// read, (unless allowEmpty) a group with no row at all, and (unless
// allowOutOfRange) a row whose target offset is outside its partition.
func Failed(io *iostreams.IOStreams, res *failover.TranslateResult, allowEmpty, allowOutOfRange bool) bool {
	failed := false
	for _, g := range res.Groups {
		if g.Error != "" {
			cmdutil.Errorf(io, "group %s: %s", g.Group, g.Error)
			failed = true
			continue
		}
		for _, r := range g.Partitions {
			if r.Error != "" {
				cmdutil.Errorf(io, "group %s %s[%d]: %s", g.Group, r.Topic, r.Partition, r.Error)
				failed = true
			}
			if r.OutOfRange != "" {
				if allowOutOfRange {
					cmdutil.Warnf(io, "group %s %s[%d]: %s", g.Group, r.Topic, r.Partition, r.OutOfRange)
				} else {
					cmdutil.Errorf(io, "group %s %s[%d]: %s", g.Group, r.Topic, r.Partition, r.OutOfRange)
					failed = true
				}
			}
		}
		if len(g.Partitions) == 0 && !allowEmpty {
			failed = true
		}
	}
	return failed
}

// WarnEmpty writes a warning to stderr for every group of res without a
// row: it has no commit on the flow's topics, or the principal may not see
// them, since OffsetFetch for all of a group's topics silently leaves out
// those the caller cannot DESCRIBE (Kafka's OffsetFetch API).
func WarnEmpty(io *iostreams.IOStreams, res *failover.TranslateResult) {
	for _, g := range res.Groups {
		if len(g.Partitions) == 0 && g.Error == "" {
			cmdutil.Warnf(io, "group %s has no committed offset on the topics flow %s->%s mirrors; "+
				"if it has commits there, the principal may lack DESCRIBE (or READ) on those topics on %s "+
				"(see mirrorctl acl-plan --failover-principal)",
				g.Group, res.Source, res.Target, res.Source)
		}
	}
}
