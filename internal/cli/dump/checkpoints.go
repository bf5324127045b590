package dump

import (
	"cmp"
	"context"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// CheckpointsOptions are the dependencies and flags of `mirrorctl
// checkpoints dump`.
type CheckpointsOptions struct {
	Common
	// Group is --group: a Go regexp matched against the whole group id.
	Group string
	// Topic is --topic: a Go regexp matched against the whole target-side
	// topic name in the checkpoint key (e.g. "us-east\.orders").
	Topic string
}

// CheckpointRow is one checkpoint in `checkpoints dump -o json`; CSV has the
// same columns in the same order.
type CheckpointRow struct {
	Group string `json:"group"`
	// Topic is the target-side name from the checkpoint key.
	Topic            string `json:"topic"`
	Partition        int32  `json:"partition"`
	UpstreamOffset   int64  `json:"upstream_offset"`
	DownstreamOffset int64  `json:"downstream_offset"`
	Metadata         string `json:"metadata"`
	// Timestamp is the record timestamp (when MM2 listed the source group's
	// offsets), RFC 3339 UTC with milliseconds.
	Timestamp string `json:"timestamp"`
	// RecordOffset is the record's offset in partition 0 of the topic.
	RecordOffset int64 `json:"record_offset"`
}

// CheckpointsResult documents the JSON shape of `checkpoints dump -o json`
// (the command streams it element by element with the same bytes).
type CheckpointsResult struct {
	output.Envelope
	// InternalTopic is the topic read: its name, cluster, and the name
	// under the other KIP-949 naming (replicate.InternalTopic).
	InternalTopic replicate.InternalTopic `json:"internal_topic"`
	Checkpoints   []CheckpointRow         `json:"checkpoints"`
	Skipped       []Skipped               `json:"skipped"`
}

// NewCmdCheckpoints returns the `checkpoints` command group with its `dump`
// subcommand.
func NewCmdCheckpoints(f *cmdutil.Factory) *cobra.Command {
	return newGroupCmd("checkpoints <command>", "Inspect MirrorMaker 2 checkpoints", NewCmdCheckpointsDump(f, nil))
}

// NewCmdCheckpointsDump returns `mirrorctl checkpoints dump`. If runF is
// non-nil it is called with the options instead of the real run (tests).
func NewCmdCheckpointsDump(f *cmdutil.Factory, runF func(*CheckpointsOptions) error) *cobra.Command {
	opts := &CheckpointsOptions{Common: newCommon(f)}
	cmd := &cobra.Command{
		Use:   "dump [--source <alias> --target <alias>] [--group <regexp>] [--topic <regexp>] [--latest]",
		Short: "Print the checkpoints MirrorMaker 2 wrote for a flow",
		Long: "Read <source>.checkpoints.internal on the target cluster (partition 0, from the\n" +
			"log start to its current end), decode every record as MirrorMaker 2's\n" +
			"MirrorCheckpointTask writes it, and print group, topic (the target-side name),\n" +
			"partition, upstream and downstream offsets, metadata, checkpoint time and the\n" +
			"record's offset, sorted by group, topic, partition and record offset.\n\n" +
			"The topic name follows the flow's replication.policy.separator and\n" +
			"replication.policy.internal.topic.separator.enabled. Without --source and\n" +
			"--target the config's one enabled flow is used.\n\n" +
			"--group and --topic are Go regular expressions matched against the whole name.\n" +
			"--latest keeps only the last checkpoint in log order per group, topic and\n" +
			"partition, as RemoteClusterUtils.translateOffsets does.\n\n" +
			"Records that cannot be decoded are not fatal: they are listed by offset in the\n" +
			"JSON \"skipped\" array and summarised on stderr. Nothing is written to any cluster.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  printed (possibly with skipped records)\n" +
			"  1  the topic does not exist or the cluster could not be read\n" +
			"  2  bad flags, no single flow to use, or an invalid mm2.properties",
		Example: "$ mirrorctl checkpoints dump --source us-east --target eu-west\n" +
			"$ mirrorctl checkpoints dump --group 'order-.*' --latest -o json\n" +
			"$ mirrorctl checkpoints dump --topic 'us-east\\.orders' -o csv",
		Args: cobra.NoArgs,
		RunE: dumpRunE(opts, func() error {
			_, err := newCPCollector(opts.Group, opts.Topic, false)
			return err
		}, runF, runCheckpointsDump),
	}
	addFlowFlags(cmd, &opts.Common)
	cmd.Flags().StringVar(&opts.Group, "group", "", "Only groups whose whole id matches this Go `regexp`")
	cmd.Flags().StringVar(&opts.Topic, "topic", "", "Only target-side topics whose whole name matches this Go `regexp`")
	cmd.Flags().BoolVar(&opts.Latest, "latest", false, "Keep only the newest checkpoint per group, topic and partition")
	return cmd
}

// cpRow is one decoded checkpoint, 48 bytes: strings are ids into the
// collector's tables, the time is epoch milliseconds.
type cpRow struct {
	group, topic, meta int32
	partition          int32
	upstream           int64
	downstream         int64
	ts                 int64 // record timestamp, epoch ms
	offset             int64 // record offset
}

type cpKey struct{ group, topic, partition int32 }

// cpCollector decodes checkpoint records into compact rows, filtering and,
// with latest, keeping one row per key (the last seen, i.e. the last in log
// order).
type cpCollector struct {
	groups, topics, metas *strtab
	keptRows[cpRow, cpKey]
}

func newCPCollector(group, topic string, latest bool) (*cpCollector, error) {
	greg, err := compileName("group", group)
	if err != nil {
		return nil, err
	}
	treg, err := compileName("topic", topic)
	if err != nil {
		return nil, err
	}
	c := &cpCollector{groups: newStrtab(greg), topics: newStrtab(treg), metas: newStrtab(nil)}
	c.init(latest)
	return c, nil
}

// add decodes one record (key, value, record timestamp in ms, offset).
func (c *cpCollector) add(key, value []byte, ts, offset int64) {
	cp, err := mm2.DecodeCheckpoint(key, value)
	if err != nil {
		if !keyDecoded(err) || (c.groups.match(cp.Group) && c.topics.match(cp.Topic)) {
			c.skip(offset, err)
		}
		return
	}
	g, gok := c.groups.id(cp.Group)
	if !gok {
		return
	}
	t, tok := c.topics.id(cp.Topic)
	if !tok {
		return
	}
	m, _ := c.metas.id(cp.Metadata)
	c.put(cpKey{g, t, cp.Partition}, cpRow{group: g, topic: t, meta: m, partition: cp.Partition,
		upstream: cp.UpstreamOffset, downstream: cp.DownstreamOffset, ts: ts, offset: offset})
}

// sort orders rows by group, topic, partition, then record offset.
func (c *cpCollector) sort() {
	gr, tr := c.groups.ranks(), c.topics.ranks()
	c.order(func(a, b *cpRow) int {
		return cmp.Or(cmp.Compare(gr[a.group], gr[b.group]), cmp.Compare(tr[a.topic], tr[b.topic]),
			cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
	})
}

// sheet declares the columns of CheckpointRow, in its order.
func (c *cpCollector) sheet() *sheet {
	g, t, m := c.groups.names, c.topics.names, c.metas.names
	row := c.rows.sorted
	return &sheet{jsonKey: "checkpoints", n: c.rows.n, skipped: c.skipped, cols: []column{
		strCol("group", "group", func(i int) string { return g[row(i).group] }),
		strCol("topic", "topic", func(i int) string { return t[row(i).topic] }),
		numCol("partition", "partition", func(i int) int64 { return int64(row(i).partition) }),
		numCol("upstream_offset", "upstream offset", func(i int) int64 { return row(i).upstream }),
		numCol("downstream_offset", "downstream offset", func(i int) int64 { return row(i).downstream }),
		strCol("metadata", "metadata", func(i int) string { return m[row(i).meta] }),
		timeCol("timestamp", func(i int) int64 { return row(i).ts }),
		numCol("record_offset", "record offset", func(i int) int64 { return row(i).offset }),
	}}
}

func runCheckpointsDump(ctx context.Context, opts *CheckpointsOptions) error {
	col, err := newCPCollector(opts.Group, opts.Topic, opts.Latest)
	if err != nil {
		return err
	}
	locate := func(cfg *config.Config) (location, error) {
		fl, err := cmdutil.ResolveFlow(cfg, opts.Source, opts.Target)
		if err != nil {
			return location{}, err
		}
		p := fl.Policy()
		topic := p.CheckpointsTopic(fl.Source)
		return location{Alias: fl.Target, Topic: topic, Kind: "checkpoints", Flow: fl.Name(), Policy: p,
			Variant: internalVariant(p, topic, func(q policy.Policy) string { return q.CheckpointsTopic(fl.Source) }),
			Hint:    "MM2 creates it when the flow " + fl.Name() + " is enabled and its checkpoint connector runs"}, nil
	}
	return runDump(ctx, &opts.Common, locate, func(r *kgo.Record) {
		col.add(r.Key, r.Value, r.Timestamp.UnixMilli(), r.Offset)
	}, func() *sheet { col.sort(); return col.sheet() })
}
