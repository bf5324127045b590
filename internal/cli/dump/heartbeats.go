package dump

import (
	"cmp"
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/policy"
)

// HeartbeatsOptions are the dependencies and flags of `mirrorctl heartbeats
// dump`.
type HeartbeatsOptions struct {
	Common
	// Cluster is --cluster: the alias whose heartbeats topic is read. Empty
	// means the target of the flow (Source, Target or the one enabled flow).
	Cluster string
	// SourceAlias and TargetAlias are --source-alias and --target-alias: Go
	// regexps matched against the whole aliases in the heartbeat key.
	SourceAlias, TargetAlias string
}

// HeartbeatRow is one heartbeat in `heartbeats dump -o json`; CSV has the
// same columns in the same order.
type HeartbeatRow struct {
	// Source and Target are the key's sourceClusterAlias and
	// targetClusterAlias: the flow that emitted the heartbeat.
	Source string `json:"source"`
	Target string `json:"target"`
	// Timestamp is the value's emission time, RFC 3339 UTC with milliseconds.
	Timestamp    string `json:"timestamp"`
	RecordOffset int64  `json:"record_offset"`
}

// HeartbeatsResult documents the JSON shape of `heartbeats dump -o json`.
type HeartbeatsResult struct {
	output.Envelope
	Heartbeats []HeartbeatRow `json:"heartbeats"`
	Skipped    []Skipped      `json:"skipped"`
}

// NewCmdHeartbeats returns the `heartbeats` command group with its `dump`
// subcommand.
func NewCmdHeartbeats(f *cmdutil.Factory) *cobra.Command {
	return newGroupCmd("heartbeats <command>", "Inspect MirrorMaker 2 heartbeats", NewCmdHeartbeatsDump(f, nil))
}

// NewCmdHeartbeatsDump returns `mirrorctl heartbeats dump`. If runF is
// non-nil it is called with the options instead of the real run (tests).
func NewCmdHeartbeatsDump(f *cmdutil.Factory, runF func(*HeartbeatsOptions) error) *cobra.Command {
	opts := &HeartbeatsOptions{Common: newCommon(f)}
	cmd := &cobra.Command{
		Use:   "dump [--cluster <alias> | --source <alias> --target <alias>] [--source-alias <regexp>] [--target-alias <regexp>] [--latest]",
		Short: "Print the heartbeats on a cluster",
		Long: "Read the `heartbeats` topic (partition 0) on --cluster, or on the target of the\n" +
			"flow given by --source/--target (default: the config's one enabled flow), decode\n" +
			"every record as MirrorHeartbeatTask writes it, and print source alias, target\n" +
			"alias, emission time and record offset, sorted by source, target and record\n" +
			"offset. Replicated heartbeats (<alias>.heartbeats) are ordinary topics and are\n" +
			"not read.\n\n" +
			"--source-alias and --target-alias are Go regular expressions matched against\n" +
			"the whole alias. --latest keeps only the last heartbeat in log order per source\n" +
			"and target. Undecodable records are listed, never fatal.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  printed (possibly with skipped records)\n" +
			"  1  the topic does not exist or the cluster could not be read\n" +
			"  2  bad flags, no single flow to use, or an invalid mm2.properties",
		Example: "$ mirrorctl heartbeats dump --cluster us-west --latest\n" +
			"$ mirrorctl heartbeats dump --source-alias us-east -o json",
		Args: cobra.NoArgs,
		RunE: dumpRunE(opts, func() error {
			if opts.Cluster != "" && (opts.Source != "" || opts.Target != "") {
				return cmdutil.FlagErrorf("--cluster cannot be used with --source or --target")
			}
			_, err := newHBCollector(opts.SourceAlias, opts.TargetAlias, false)
			return err
		}, runF, runHeartbeatsDump),
	}
	cmd.Flags().StringVar(&opts.Cluster, "cluster", "", "Read the heartbeats topic on this cluster `alias`")
	addFlowFlags(cmd, &opts.Common)
	cmd.Flags().StringVar(&opts.SourceAlias, "source-alias", "", "Only heartbeats whose whole source alias matches this Go `regexp`")
	cmd.Flags().StringVar(&opts.TargetAlias, "target-alias", "", "Only heartbeats whose whole target alias matches this Go `regexp`")
	cmd.Flags().BoolVar(&opts.Latest, "latest", false, "Keep only the newest heartbeat per source and target")
	return cmd
}

// hbRow is one decoded heartbeat, 24 bytes.
type hbRow struct {
	source, target int32
	ts             int64 // value timestamp, epoch ms
	offset         int64
}

type hbKey struct{ source, target int32 }

// hbCollector decodes heartbeat records into compact rows, filtering and,
// with latest, keeping one row per source and target.
type hbCollector struct {
	sources, targets *strtab
	keptRows[hbRow, hbKey]
}

func newHBCollector(source, target string, latest bool) (*hbCollector, error) {
	sre, err := compileName("source-alias", source)
	if err != nil {
		return nil, err
	}
	tre, err := compileName("target-alias", target)
	if err != nil {
		return nil, err
	}
	c := &hbCollector{sources: newStrtab(sre), targets: newStrtab(tre)}
	c.init(latest)
	return c, nil
}

// add decodes one record (key, value, offset); the time is the value's.
func (c *hbCollector) add(key, value []byte, offset int64) {
	h, err := mm2.DecodeHeartbeat(key, value)
	if err != nil {
		if !keyDecoded(err) || (c.sources.match(h.SourceAlias) && c.targets.match(h.TargetAlias)) {
			c.skip(offset, err)
		}
		return
	}
	s, sok := c.sources.id(h.SourceAlias)
	if !sok {
		return
	}
	t, tok := c.targets.id(h.TargetAlias)
	if !tok {
		return
	}
	c.put(hbKey{s, t}, hbRow{source: s, target: t, ts: h.Timestamp, offset: offset})
}

// sort orders rows by source, target, then record offset.
func (c *hbCollector) sort() {
	sr, tr := c.sources.ranks(), c.targets.ranks()
	c.order(func(a, b *hbRow) int {
		return cmp.Or(cmp.Compare(sr[a.source], sr[b.source]), cmp.Compare(tr[a.target], tr[b.target]), cmp.Compare(a.offset, b.offset))
	})
}

// sheet declares the columns of HeartbeatRow, in its order.
func (c *hbCollector) sheet() *sheet {
	s, t := c.sources.names, c.targets.names
	row := c.rows.sorted
	return &sheet{jsonKey: "heartbeats", n: c.rows.n, skipped: c.skipped, cols: []column{
		strCol("source", "source", func(i int) string { return s[row(i).source] }),
		strCol("target", "target", func(i int) string { return t[row(i).target] }),
		timeCol("timestamp", func(i int) int64 { return row(i).ts }),
		numCol("record_offset", "record offset", func(i int) int64 { return row(i).offset }),
	}}
}

func runHeartbeatsDump(ctx context.Context, opts *HeartbeatsOptions) error {
	col, err := newHBCollector(opts.SourceAlias, opts.TargetAlias, opts.Latest)
	if err != nil {
		return err
	}
	locate := func(cfg *config.Config) (location, error) {
		if alias := opts.Cluster; alias != "" {
			if _, ok := cfg.Cluster(alias); !ok {
				return location{}, cmdutil.FlagErrorf("--cluster %s: no such cluster in %s (clusters: %s)", alias, cfg.File, strings.Join(cfg.Clusters, ", "))
			}
			return location{Alias: alias, Topic: policy.HeartbeatsTopic, Kind: "heartbeats",
				Hint: "MM2 creates it on the target of every flow with emit.heartbeats.enabled = true"}, nil
		}
		fl, err := cmdutil.ResolveFlow(cfg, opts.Source, opts.Target)
		if err != nil {
			return location{}, err
		}
		return location{Alias: fl.Target, Topic: fl.Policy().HeartbeatsTopic(), Kind: "heartbeats",
			Hint: "MM2 creates it on " + fl.Target + " when " + fl.Name() + " has emit.heartbeats.enabled = true"}, nil
	}
	return runDump(ctx, &opts.Common, locate, func(r *kgo.Record) {
		col.add(r.Key, r.Value, r.Offset)
	}, func() *sheet { col.sort(); return col.sheet() })
}
