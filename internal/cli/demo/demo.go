// Package demo implements `mirrorctl demo`: the whole mirror on two embedded
// clusters, checked record by record.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/config"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/kafka"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// DemoOptions are the dependencies and flags of `mirrorctl demo`.
type DemoOptions struct {
	IO     *iostreams.IOStreams
	Output func() output.Format
	Logger *slog.Logger
	Now    func() time.Time

	Dir     string // where mm2.properties is written; "" = a temporary directory
	Records int    // records per topic
	// Keep is --keep: after the check, leave both clusters running (and
	// the config in place) until the context is cancelled (Ctrl-C), so
	// other mirrorctl processes can be pointed at them.
	Keep bool
}

// NewCmdDemo returns `mirrorctl demo`.
func NewCmdDemo(f *cmdutil.Factory, runF func(*DemoOptions) error) *cobra.Command {
	opts := &DemoOptions{IO: f.IO, Output: f.Output, Logger: f.Logger, Now: f.Now}
	cmd := &cobra.Command{
		Use:   "demo [--dir <path>] [--records <n>] [--keep]",
		Short: "Replicate between two embedded clusters and check every record",
		Long: "Start two in-process Kafka clusters named us-east and eu-west, write the\n" +
			"mm2.properties that joins them, seed the topics orders and payments (with\n" +
			"headers, null keys and a tombstone) and a consumer group, run\n" +
			"`mirrorctl replicate --once` on that file, and compare every record of each\n" +
			"topic with its copy (us-east.orders, us-east.payments).\n\n" +
			"Nothing outside this process is touched; the clusters vanish when it exits.\n" +
			"With --keep they stay up after the check, until Ctrl-C: the demo prints\n" +
			"their bootstrap addresses, the config path and commands to try from another\n" +
			"terminal (translate, failover, lag, acl-plan) against the seeded consumer\n" +
			"group order-processor. Ctrl-C then stops them and exits 0.\n\n" +
			"EXIT STATUS\n\n" +
			"  0  every record arrived intact (with --keep: and Ctrl-C stopped it)\n" +
			"  1  the demo could not run\n" +
			"  3  a record is missing or differs",
		Example: "$ mirrorctl demo\n$ mirrorctl demo --records 10000 -o json\n$ mirrorctl demo --keep --dir ./demo",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Records < 1 {
				return cmdutil.FlagErrorf("--records must be at least 1")
			}
			if runF != nil {
				return runF(opts)
			}
			return runDemo(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "Write the demo's mm2.properties here instead of a temporary directory")
	cmd.Flags().IntVar(&opts.Records, "records", 500, "Records to seed per topic")
	cmd.Flags().BoolVar(&opts.Keep, "keep", false, "Keep both clusters running after the check, until Ctrl-C")
	return cmd
}

// Result is the JSON document of `mirrorctl demo -o json`.
type Result struct {
	output.Envelope
	Config      string        `json:"config"` // path of the mm2.properties used
	Topics      []TopicResult `json:"topics"`
	OffsetSyncs int           `json:"offset_syncs"` // records in mm2-offset-syncs.eu-west.internal
	Heartbeats  int           `json:"heartbeats"`   // records in eu-west's heartbeats topic
	ElapsedMs   int64         `json:"elapsed_ms"`
	OK          bool          `json:"ok"`
	// Clusters maps each alias to its bootstrap addresses; with --keep they
	// answer until the demo is stopped.
	Clusters map[string][]string `json:"clusters"`
	// Kept is true with --keep: the clusters stay up after this document.
	Kept bool `json:"kept"`
}

// TopicResult compares one source topic with its remote copy.
type TopicResult struct {
	Topic         string `json:"topic"`
	SourceRecords int    `json:"source_records"`
	RemoteTopic   string `json:"remote_topic"`
	TargetRecords int    `json:"target_records"`
	Match         bool   `json:"match"`
	Mismatch      string `json:"mismatch,omitempty"` // the first difference found
}

var demoTopics = []struct {
	name       string
	partitions int32
}{{"orders", 3}, {"payments", 2}}

func runDemo(ctx context.Context, opts *DemoOptions) error {
	start := time.Now()
	east, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("demo-us-east"))
	if err != nil {
		return fmt.Errorf("start embedded cluster us-east: %w", err)
	}
	defer east.Close()
	west, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID("demo-eu-west"))
	if err != nil {
		return fmt.Errorf("start embedded cluster eu-west: %w", err)
	}
	defer west.Close()

	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "mirrorctl-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil { // --dir ./demo on a fresh checkout
		return fmt.Errorf("create --dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, "mm2.properties")
	if err := os.WriteFile(path, []byte(properties(east.ListenAddrs(), west.ListenAddrs())), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	kf := kafka.NewFactory(func(alias string, role replicate.ClientRole) (map[string]string, error) {
		cl, ok := cfg.Cluster(alias)
		if !ok {
			return nil, fmt.Errorf("no cluster %q in %s", alias, path)
		}
		return cl.ClientProps(role), nil
	}, opts.Logger)
	defer kf.Close()
	step := func(msg string) {
		if opts.IO.IsStderrTTY() {
			fmt.Fprintf(opts.IO.ErrOut, "• %s\n", msg)
		}
	}
	step("embedded clusters us-east " + strings.Join(east.ListenAddrs(), ",") + " and eu-west " + strings.Join(west.ListenAddrs(), ","))
	if opts.Dir == "" {
		step("config " + path + " (removed at exit; --dir keeps it)")
	} else {
		step("config " + path)
	}

	if err := seed(ctx, kf, opts.Records); err != nil {
		return err
	}
	step(fmt.Sprintf("seeded orders and payments with %d records each, group order-processor", opts.Records))

	var flows []replicate.FlowConfig
	for _, f := range cfg.Flows {
		flows = append(flows, cmdutil.FlowConfig(cfg, f))
	}
	m, err := replicate.New(replicate.Options{Flows: flows, Clients: kf, Logger: opts.Logger, Once: true})
	if err != nil {
		return err
	}
	if err := m.Run(ctx); err != nil {
		return err
	}
	step("replicated us-east->eu-west")

	res := Result{Envelope: output.NewEnvelope(), Config: path, OK: true, Kept: opts.Keep,
		Clusters: map[string][]string{"us-east": east.ListenAddrs(), "eu-west": west.ListenAddrs()}}
	for _, t := range demoTopics {
		tr, err := compare(ctx, kf, t.name, "us-east."+t.name)
		if err != nil {
			return err
		}
		res.OK = res.OK && tr.Match
		res.Topics = append(res.Topics, tr)
	}
	if res.OffsetSyncs, err = count(ctx, kf, "us-east", "mm2-offset-syncs.eu-west.internal"); err != nil {
		return err
	}
	if res.Heartbeats, err = count(ctx, kf, "eu-west", "heartbeats"); err != nil {
		return err
	}
	res.ElapsedMs = time.Since(start).Milliseconds()

	if opts.Output() == output.FormatJSON {
		if err := output.WriteJSON(opts.IO.Out, res); err != nil {
			return err
		}
	} else {
		t := output.NewTable("topic", "source records", "remote topic", "target records", "match")
		for _, tr := range res.Topics {
			match := "yes"
			if !tr.Match {
				match = "no: " + tr.Mismatch
			}
			t.AddRow(tr.Topic, strconv.Itoa(tr.SourceRecords), tr.RemoteTopic, strconv.Itoa(tr.TargetRecords), match)
		}
		if err := t.Render(opts.IO, opts.Output()); err != nil {
			return err
		}
		if opts.Output() == output.FormatTable {
			fmt.Fprintf(opts.IO.Out, "\noffset syncs written: %d; heartbeats on eu-west: %d; %d ms\n", res.OffsetSyncs, res.Heartbeats, res.ElapsedMs)
		}
	}
	if !res.OK {
		return cmdutil.CheckFailedf("some records did not arrive intact")
	}
	if opts.Keep {
		if opts.Output() != output.FormatJSON {
			printKept(opts.IO, res)
		}
		<-ctx.Done() // Ctrl-C: the deferred Close calls stop both clusters
		if opts.IO.IsStderrTTY() {
			fmt.Fprintln(opts.IO.ErrOut, "• stopped the embedded clusters")
		}
		return nil
	}
	return nil
}

// printKept tells, on stdout, where the kept clusters answer and what to
// try against them.
func printKept(ios *iostreams.IOStreams, res Result) {
	w := ios.Out
	fmt.Fprintf(w, "\nThe clusters keep running until Ctrl-C:\n")
	fmt.Fprintf(w, "  us-east  %s\n", strings.Join(res.Clusters["us-east"], ","))
	fmt.Fprintf(w, "  eu-west  %s\n", strings.Join(res.Clusters["eu-west"], ","))
	fmt.Fprintf(w, "  config   %s\n", res.Config)
	fmt.Fprintf(w, "\nIn another terminal:\n")
	fmt.Fprintf(w, "  export MIRRORCTL_CONFIG=%s\n", res.Config)
	self := invokedAs()
	for _, c := range []string{
		"translate --group order-processor",
		"failover plan --type planned --group order-processor    # the plan; nothing is changed",
		"failover apply --type planned --group order-processor --producers-stopped --yes    # commit, verify, evidence",
		"lag",
		"checkpoints dump --latest",
		"acl-plan --principal User:mm2 --failover-principal User:ops",
	} {
		fmt.Fprintf(w, "  %s %s\n", self, c)
	}
}

// invokedAs is how to run this binary again from the same directory: as
// typed when it was started by a path (./bin/mirrorctl), else "mirrorctl"
// (found on PATH).
func invokedAs() string {
	if len(os.Args) > 0 && strings.ContainsRune(os.Args[0], filepath.Separator) {
		return os.Args[0]
	}
	return "mirrorctl"
}

// properties is the demo's mm2.properties: one flow us-east->eu-west with the
// default replication policy, sized for one-broker clusters.
func properties(east, west []string) string {
	return `# Written by mirrorctl demo: two embedded clusters, one flow.
clusters = us-east, eu-west
us-east.bootstrap.servers = ` + strings.Join(east, ",") + `
eu-west.bootstrap.servers = ` + strings.Join(west, ",") + `

us-east->eu-west.enabled = true
us-east->eu-west.topics = orders, payments
eu-west->us-east.enabled = false

# one-broker clusters
replication.factor = 1
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
`
}

// seed fills orders and payments on us-east with records of every shape the
// copy must keep, and commits a consumer group halfway through orders.
func seed(ctx context.Context, kf *kafka.Factory, n int) error {
	adm, err := kf.Admin("us-east")
	if err != nil {
		return err
	}
	for _, t := range demoTopics {
		if _, err := adm.CreateTopic(ctx, t.partitions, 1, nil, t.name); err != nil {
			return fmt.Errorf("create %s on us-east: %w", t.name, err)
		}
	}
	cl, err := kf.Client("us-east", replicate.RoleProducer)
	if err != nil {
		return err
	}
	defer cl.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var recs []*kgo.Record
	for _, t := range demoTopics {
		for i := 0; i < n; i++ {
			r := &kgo.Record{
				Topic:     t.name,
				Key:       []byte(fmt.Sprintf("customer-%d", i%37)),
				Value:     []byte(fmt.Sprintf(`{"%s":%d,"amount":%d.%02d}`, strings.TrimSuffix(t.name, "s"), i, i%500, i%100)),
				Timestamp: base.Add(time.Duration(i) * time.Millisecond),
				Headers:   []kgo.RecordHeader{{Key: "source", Value: []byte("demo")}},
			}
			switch {
			case i%10 == 3:
				r.Key = nil // null key
			case i%10 == 7:
				r.Headers = append(r.Headers, kgo.RecordHeader{Key: "source", Value: nil}) // repeated key, null value
			}
			if i == n/2 {
				r.Value = nil // a tombstone
			}
			recs = append(recs, r)
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("seed us-east: %w", err)
	}
	offsets := kadm.Offsets{}
	for p := int32(0); p < demoTopics[0].partitions; p++ {
		offsets.AddOffset("orders", p, int64(n/int(demoTopics[0].partitions)/2), -1)
	}
	resp, err := adm.CommitOffsets(ctx, "order-processor", offsets)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit group order-processor on us-east: %w", err)
	}
	return nil
}

// readAll reads topic on alias from start to end, per partition.
func readAll(ctx context.Context, kf *kafka.Factory, alias, topic string) (map[int32][]*kgo.Record, error) {
	adm, err := kf.Admin(alias)
	if err != nil {
		return nil, err
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s on %s: %w", topic, alias, err)
	}
	out := map[int32][]*kgo.Record{}
	want := map[int32]int64{}
	assign := map[int32]kgo.Offset{}
	var lerr error
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			lerr = fmt.Errorf("%s[%d] on %s: %w", topic, o.Partition, alias, o.Err)
			return
		}
		out[o.Partition] = nil
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
			assign[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if lerr != nil || len(want) == 0 {
		return out, lerr
	}
	cl, err := kf.Client(alias, replicate.RoleConsumer, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}), kgo.KeepControlRecords(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(want) > 0 {
		fs := cl.PollFetches(rctx)
		if err := rctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s on %s: %w", topic, alias, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out, nil
}

func count(ctx context.Context, kf *kafka.Factory, alias, topic string) (int, error) {
	parts, err := readAll(ctx, kf, alias, topic)
	n := 0
	for _, rs := range parts {
		n += len(rs)
	}
	return n, err
}

// compare reads a source topic and its remote copy and checks them record by
// record: partition, order, key, value, headers and timestamp.
func compare(ctx context.Context, kf *kafka.Factory, topic, remote string) (TopicResult, error) {
	tr := TopicResult{Topic: topic, RemoteTopic: remote, Match: true}
	src, err := readAll(ctx, kf, "us-east", topic)
	if err != nil {
		return tr, err
	}
	dst, err := readAll(ctx, kf, "eu-west", remote)
	if err != nil {
		return tr, err
	}
	mismatch := func(format string, args ...any) {
		if tr.Match {
			tr.Match = false
			tr.Mismatch = fmt.Sprintf(format, args...)
		}
	}
	for p, srecs := range src {
		tr.SourceRecords += len(srecs)
		drecs := dst[p]
		tr.TargetRecords += len(drecs)
		if len(drecs) != len(srecs) {
			mismatch("partition %d has %d records, source %d", p, len(drecs), len(srecs))
			continue
		}
		for i, s := range srecs {
			d := drecs[i]
			switch {
			case !sameBytes(s.Key, d.Key):
				mismatch("partition %d record %d: key differs", p, i)
			case !sameBytes(s.Value, d.Value):
				mismatch("partition %d record %d: value differs", p, i)
			case !s.Timestamp.Equal(d.Timestamp):
				mismatch("partition %d record %d: timestamp differs", p, i)
			case !sameHeaders(s.Headers, d.Headers):
				mismatch("partition %d record %d: headers differ", p, i)
			}
		}
	}
	if len(dst) != len(src) {
		mismatch("%d partitions, source %d", len(dst), len(src))
	}
	return tr, nil
}

func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !sameBytes(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}
