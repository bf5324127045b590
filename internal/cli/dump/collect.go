package dump

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// newGroupCmd returns the command group use (e.g. "checkpoints <command>")
// with its one subcommand dump.
func newGroupCmd(use, short string, dump *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: cmdutil.GroupRunE}
	cmd.AddCommand(dump)
	return cmd
}

// addFlowFlags adds --source and --target.
func addFlowFlags(cmd *cobra.Command, c *Common) {
	cmd.Flags().StringVar(&c.Source, "source", "", "Source cluster `alias` of the flow (default: the one enabled flow)")
	cmd.Flags().StringVar(&c.Target, "target", "", "Target cluster `alias` of the flow (default: the one enabled flow)")
}

// dumpRunE returns a dump command's RunE: check validates the flags (a bad
// one is a *cmdutil.FlagError, exit 2), then runF(opts) is called when set
// (tests), else run.
func dumpRunE[O any](opts *O, check func() error, runF func(*O) error, run func(context.Context, *O) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		if err := check(); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return run(cmd.Context(), opts)
	}
}

// keptRows is the storage every dump's collector shares: the decoded rows
// (R, a compact struct), the records that could not be decoded, and with
// --latest an index that keeps one row per key K, the last put in log order
// (as MirrorClient and RemoteClusterUtils.translateOffsets read MM2's
// topics).
type keptRows[R any, K comparable] struct {
	latest  bool
	index   map[K]int32
	rows    rowStore[R]
	skipped []Skipped
}

// init sets --latest; with it, put keeps one row per key.
func (k *keptRows[R, K]) init(latest bool) {
	k.latest = latest
	if latest {
		k.index = make(map[K]int32)
	}
}

// put stores row; with latest it replaces the row stored under key, if
// any, in place.
func (k *keptRows[R, K]) put(key K, row R) {
	if !k.latest {
		k.rows.add(row)
		return
	}
	if i, ok := k.index[key]; ok {
		*k.rows.at(i) = row
		return
	}
	k.index[key] = k.rows.add(row)
}

// skip records that the record at offset could not be decoded (err is the
// decoder's error).
func (k *keptRows[R, K]) skip(offset int64, err error) {
	k.skipped = append(k.skipped, Skipped{RecordOffset: offset, Error: err.Error()})
}

// order drops the --latest index (no longer needed; it can be collected
// before rendering) and sorts the rows by cmp.
func (k *keptRows[R, K]) order(cmp func(a, b *R) int) {
	k.index = nil
	k.rows.sortBy(cmp)
}

// location is where a dump reads its topic: Topic on cluster Alias.
// Variant and Hint go to checkTopic; Missing, when set, is called with the
// *TopicNotFoundError checkTopic returns when Variant does not exist either,
// and may improve its Hint.
//
// Kind (checkpoints, offset-syncs, heartbeats) names the topic in the
// output's internal_topic; Flow and Policy, when the topic is a flow's, say
// which naming it follows (cmdutil.NoteInternalTopics).
type location struct {
	Alias, Topic, Variant, Hint string
	Missing                     func(ctx context.Context, clients replicate.Clients, nf *TopicNotFoundError)
	Kind, Flow                  string
	Policy                      policy.Policy
}

// runDump is the run every dump command shares: load the config (printing
// its warnings to stderr even when it fails to load), locate the topic,
// check that it exists, feed each record of its partition 0 to read
// (replicate.ReadInternalTopic), then render the sheet finish returns.
// Errors from locate, the config, the clients, checkTopic and the read are
// returned as they are.
func runDump(ctx context.Context, c *Common, locate func(*config.Config) (location, error), read func(*kgo.Record), finish func() *sheet) error {
	cfg, err := c.Config()
	if cfg != nil {
		cmdutil.SummarizeWarnings(c.IO, cfg)
	}
	if err != nil {
		return err
	}
	loc, err := locate(cfg)
	if err != nil {
		return err
	}
	clients, err := c.Clients()
	if err != nil {
		return err
	}
	defer lowerGC()()
	if err := checkTopic(ctx, clients, loc.Alias, loc.Topic, loc.Variant, loc.Hint); err != nil {
		var nf *TopicNotFoundError
		if loc.Missing != nil && errors.As(err, &nf) && !nf.VariantExists {
			loc.Missing(ctx, clients, nf)
		}
		return err
	}
	it := replicate.InternalTopic{Kind: loc.Kind, Cluster: loc.Alias, Topic: loc.Topic, Other: loc.Variant}
	if loc.Policy != nil {
		its := []replicate.InternalTopic{it}
		replicate.LookUpOtherNaming(ctx, clients, its)
		cmdutil.NoteInternalTopics(c.IO, loc.Flow, loc.Policy, its)
		it = its[0]
	}
	prog, read := withProgress(ctx, c, clients, loc, read)
	err = replicate.ReadInternalTopic(ctx, clients, loc.Alias, loc.Topic, read)
	prog.Stop()
	if err != nil {
		return err
	}
	s := finish()
	s.internal = &it
	return render(c, s)
}

// withProgress returns a progress bar on stderr (a no-op off a terminal) for
// reading loc's partition 0 from its log start to its end offset now, and
// read wrapped to advance it every 4096 records. Off a terminal read is
// returned as is and no offsets are asked for.
func withProgress(ctx context.Context, c *Common, clients replicate.Clients, loc location, read func(*kgo.Record)) (*output.Progress, func(*kgo.Record)) {
	if !c.IO.IsStderrTTY() {
		return &output.Progress{}, read
	}
	total, start := int64(0), int64(0)
	if adm, err := clients.Admin(loc.Alias); err == nil {
		starts, serr := adm.ListStartOffsets(ctx, loc.Topic)
		ends, eerr := adm.ListEndOffsets(ctx, loc.Topic)
		if serr == nil && eerr == nil {
			s, sok := starts.Lookup(loc.Topic, 0)
			e, eok := ends.Lookup(loc.Topic, 0)
			if sok && eok && s.Err == nil && e.Err == nil {
				start, total = s.Offset, e.Offset-s.Offset
			}
		}
	}
	prog := output.NewProgress(c.IO, "reading "+loc.Topic+" on "+loc.Alias, total, "records")
	return prog, func(r *kgo.Record) {
		read(r)
		if r.Offset&4095 == 0 {
			prog.Set(r.Offset - start + 1)
		}
	}
}
