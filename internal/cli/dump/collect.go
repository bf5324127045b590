package dump

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/replicate"
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
type location struct {
	Alias, Topic, Variant, Hint string
	Missing                     func(ctx context.Context, clients replicate.Clients, nf *TopicNotFoundError)
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
		cmdutil.PrintWarnings(c.IO, cfg.Warnings)
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
	if err := replicate.ReadInternalTopic(ctx, clients, loc.Alias, loc.Topic, read); err != nil {
		return err
	}
	return render(c, finish())
}
