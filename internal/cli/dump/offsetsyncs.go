package dump

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// OffsetSyncsOptions are the dependencies and flags of `mirrorctl
// offset-syncs dump`.
type OffsetSyncsOptions struct {
	Common
	// Topic is --topic: a Go regexp matched against the whole source-side
	// (upstream, un-renamed) topic name in the offset-sync key.
	Topic string
}

// OffsetSyncRow is one offset sync in `offset-syncs dump -o json`; CSV has
// the same columns in the same order.
type OffsetSyncRow struct {
	// Topic is the source-side topic name from the key, e.g. "orders".
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	UpstreamOffset   int64  `json:"upstream_offset"`
	DownstreamOffset int64  `json:"downstream_offset"`
	// Timestamp is the record timestamp, RFC 3339 UTC with milliseconds.
	Timestamp    string `json:"timestamp"`
	RecordOffset int64  `json:"record_offset"`
}

// OffsetSyncsResult documents the JSON shape of `offset-syncs dump -o json`.
type OffsetSyncsResult struct {
	output.Envelope
	OffsetSyncs []OffsetSyncRow `json:"offset_syncs"`
	Skipped     []Skipped       `json:"skipped"`
}

// NewCmdOffsetSyncs returns the `offset-syncs` command group with its `dump`
// subcommand.
func NewCmdOffsetSyncs(f *cmdutil.Factory) *cobra.Command {
	return newGroupCmd("offset-syncs <command>", "Inspect MirrorMaker 2 offset syncs", NewCmdOffsetSyncsDump(f, nil))
}

// NewCmdOffsetSyncsDump returns `mirrorctl offset-syncs dump`. If runF is
// non-nil it is called with the options instead of the real run (tests).
func NewCmdOffsetSyncsDump(f *cmdutil.Factory, runF func(*OffsetSyncsOptions) error) *cobra.Command {
	opts := &OffsetSyncsOptions{Common: newCommon(f)}
	cmd := &cobra.Command{
		Use:   "dump [--source <alias> --target <alias>] [--topic <regexp>] [--latest]",
		Short: "Print the offset syncs MirrorMaker 2 wrote for a flow",
		Long: "Read the flow's offset-syncs topic where offset-syncs.topic.location puts it\n" +
			"(default: mm2-offset-syncs.<target>.internal on the source cluster; with\n" +
			"location target: mm2-offset-syncs.<source>.internal on the target), decode\n" +
			"every record as MirrorSourceTask writes it, and print the source-side topic,\n" +
			"partition, upstream and downstream offsets, record time and record offset,\n" +
			"sorted by topic, partition and record offset.\n\n" +
			"--topic is a Go regular expression matched against the whole source-side\n" +
			"topic name. --latest keeps only the last sync in log order per topic and\n" +
			"partition. Undecodable records are listed, never fatal.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  printed (possibly with skipped records)\n" +
			"  1  the topic does not exist or the cluster could not be read\n" +
			"  2  bad flags, no single flow to use, or an invalid mm2.properties",
		Example: "$ mirrorctl offset-syncs dump --source us-east --target us-west\n" +
			"$ mirrorctl offset-syncs dump --topic orders --latest -o json",
		Args: cobra.NoArgs,
		RunE: dumpRunE(opts, func() error {
			_, err := newOSCollector(opts.Topic, false)
			return err
		}, runF, runOffsetSyncsDump),
	}
	addFlowFlags(cmd, &opts.Common)
	cmd.Flags().StringVar(&opts.Topic, "topic", "", "Only source-side topics whose whole name matches this Go `regexp`")
	cmd.Flags().BoolVar(&opts.Latest, "latest", false, "Keep only the newest sync per topic and partition")
	return cmd
}

// osRow is one decoded offset sync, 40 bytes.
type osRow struct {
	topic, partition int32
	upstream         int64
	downstream       int64
	ts               int64
	offset           int64
}

type osKey struct{ topic, partition int32 }

// osCollector decodes offset-sync records into compact rows, filtering and,
// with latest, keeping one row per topic and partition.
type osCollector struct {
	topics *strtab
	keptRows[osRow, osKey]
}

func newOSCollector(topic string, latest bool) (*osCollector, error) {
	re, err := compileName("topic", topic)
	if err != nil {
		return nil, err
	}
	c := &osCollector{topics: newStrtab(re)}
	c.init(latest)
	return c, nil
}

// add decodes one record (key, value, record timestamp in ms, offset).
func (c *osCollector) add(key, value []byte, ts, offset int64) {
	s, err := mm2.DecodeOffsetSync(key, value)
	if err != nil {
		if !keyDecoded(err) || c.topics.match(s.Topic) {
			c.skip(offset, err)
		}
		return
	}
	t, ok := c.topics.id(s.Topic)
	if !ok {
		return
	}
	c.put(osKey{t, s.Partition}, osRow{topic: t, partition: s.Partition, upstream: s.UpstreamOffset,
		downstream: s.DownstreamOffset, ts: ts, offset: offset})
}

// sort orders rows by topic, partition, then record offset.
func (c *osCollector) sort() {
	tr := c.topics.ranks()
	c.order(func(a, b *osRow) int {
		return cmp.Or(cmp.Compare(tr[a.topic], tr[b.topic]), cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
	})
}

// sheet declares the columns of OffsetSyncRow, in its order.
func (c *osCollector) sheet() *sheet {
	t := c.topics.names
	row := c.rows.sorted
	return &sheet{jsonKey: "offset_syncs", n: c.rows.n, skipped: c.skipped, cols: []column{
		strCol("topic", "topic", func(i int) string { return t[row(i).topic] }),
		numCol("partition", "partition", func(i int) int64 { return int64(row(i).partition) }),
		numCol("upstream_offset", "upstream offset", func(i int) int64 { return row(i).upstream }),
		numCol("downstream_offset", "downstream offset", func(i int) int64 { return row(i).downstream }),
		timeCol("timestamp", func(i int) int64 { return row(i).ts }),
		numCol("record_offset", "record offset", func(i int) int64 { return row(i).offset }),
	}}
}

func runOffsetSyncsDump(ctx context.Context, opts *OffsetSyncsOptions) error {
	col, err := newOSCollector(opts.Topic, opts.Latest)
	if err != nil {
		return err
	}
	locate := func(cfg *config.Config) (location, error) {
		fl, err := cmdutil.ResolveFlow(cfg, opts.Source, opts.Target)
		if err != nil {
			return location{}, err
		}
		fc := cmdutil.FlowConfig(cfg, fl)
		alias, topic := fc.OffsetSyncsTopic()
		other := fc.Source // the alias named inside the topic
		if alias == fc.Source {
			other = fc.Target
		}
		return location{Alias: alias, Topic: topic, Kind: "offset-syncs", Flow: fl.Name(), Policy: fc.Policy,
			Variant: internalVariant(fc.Policy, topic, func(q policy.Policy) string { return q.OffsetSyncsTopic(other) }),
			Hint: "offset-syncs.topic.location is " + fc.OffsetSyncsTopicLocation + " for " + fl.Name() +
				"; it must match the MM2 that wrote the syncs, and emit.offset-syncs.enabled must be true there",
			Missing: func(ctx context.Context, clients replicate.Clients, nf *TopicNotFoundError) {
				otherLocationHint(ctx, clients, fc, nf)
			}}, nil
	}
	return runDump(ctx, &opts.Common, locate, func(r *kgo.Record) {
		col.add(r.Key, r.Value, r.Timestamp.UnixMilli(), r.Offset)
	}, func() *sheet { col.sort(); return col.sheet() })
}

// otherLocationProbe bounds the look for the offset-syncs topic at the other
// location: it only improves an error, so an unreachable cluster must not
// delay that error for long.
const otherLocationProbe = 5 * time.Second

// otherLocationHint looks for the flow's offset-syncs topic at the other
// offset-syncs.topic.location (KIP-716) and, when it exists there, makes
// nf's hint say which setting reads it. Failures are ignored.
func otherLocationHint(ctx context.Context, clients replicate.Clients, fc replicate.FlowConfig, nf *TopicNotFoundError) {
	other := replicate.LocationTarget
	if fc.OffsetSyncsTopicLocation == replicate.LocationTarget {
		other = replicate.LocationSource
	}
	fc.OffsetSyncsTopicLocation = other
	alias, topic := fc.OffsetSyncsTopic()
	ctx, cancel := context.WithTimeout(ctx, otherLocationProbe)
	defer cancel()
	if checkTopic(ctx, clients, alias, topic, "", "") == nil {
		nf.Hint = fmt.Sprintf("%s exists on cluster %s: set offset-syncs.topic.location = %s for %s to read it", topic, alias, other, fc.Name())
	}
}
