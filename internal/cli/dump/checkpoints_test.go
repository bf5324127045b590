package dump

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

func TestNewCmdCheckpointsDump(t *testing.T) {
	testFlags(t, []flagCase[CheckpointsOptions]{
		{args: []string{}},
		{
			args: []string{"--source", "us-east", "--target", "us-west", "--group", "g.*", "--topic", `us-east\.orders`, "--latest"},
			want: CheckpointsOptions{Common: Common{Source: "us-east", Target: "us-west", Latest: true}, Group: "g.*", Topic: `us-east\.orders`},
		},
		{args: []string{"--group", "("}, wantErr: "--group \"(\": error parsing regexp: missing closing ): `^(?:()$`"},
		{args: []string{"--topic", "a["}, wantErr: "--topic \"a[\": error parsing regexp: missing closing ]: `[)$`"},
	}, NewCmdCheckpointsDump, func(o *CheckpointsOptions) any { return [...]any{o.Source, o.Target, o.Latest, o.Group, o.Topic} })
}

// checkpointFixture is the log of us-east.checkpoints.internal used by the
// tests, record offset = index.
func checkpointFixture(t testing.TB) []rec {
	cp := func(g, topic string, p int32, up, down int64, meta string) mm2.Checkpoint {
		return mm2.Checkpoint{Group: g, Topic: topic, Partition: p, UpstreamOffset: up, DownstreamOffset: down, Metadata: meta}
	}
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	goodKey := must(cp("order-processor", "us-east.orders", 2, 0, 0, "").MarshalKey())
	tombKey := must(cp("billing", "us-east.payments", 1, 0, 0, "").MarshalKey())
	v1 := must(cp("order-processor", "us-east.orders", 0, 7, 7, "").MarshalValue())
	v1[1] = 1 // value version 1
	return []rec{
		0:  cpRec(t, cp("order-processor", "us-east.orders", 3, 1234, 1200, ""), at(0)),
		1:  cpRec(t, cp("order-processor", "us-east.orders", 0, 20, 18, ""), at(1)),
		2:  cpRec(t, cp("billing", "us-east.payments", 0, 5, 4, "m"), at(2)),
		3:  cpRec(t, cp("order-processor", "us-east.orders", 3, 1300, 1290, ""), at(3)),
		4:  {Key: goodKey, Value: []byte{0, 0, 0}, At: at(4)}, // truncated value
		5:  {Key: tombKey, Value: nil, At: at(5)},             // tombstone
		6:  {Key: []byte{0x00}, Value: []byte{0}, At: at(6)},  // garbage key
		7:  cpRec(t, cp("order-processor", "us-east.orders", 3, 1250, 1240, "commit, \"quoted\""), at(7)),
		8:  {Key: must(cp("order-processor", "us-east.orders", 0, 0, 0, "").MarshalKey()), Value: v1, At: at(8)},
		9:  cpRec(t, cp("analytics", "orders", 1, 9, 8, ""), at(9)),
		10: cpRec(t, cp("billing", "us-east.payments", 0, 6, 5, ""), at(10)),
	}
}

func TestCheckpointsDump(t *testing.T) {
	p := newClusterPair(t)
	p.produce(t, "us-west", "us-east.checkpoints.internal", checkpointFixture(t))

	const skippedAll = "warning: 4 records skipped: " +
		`offset 4: checkpoint value: field "upstreamOffset": need 8 bytes, have 1; ` +
		"offset 5: checkpoint value: null (tombstone); " +
		`offset 6: checkpoint key: field "group": need 2 bytes, have 1; ` +
		`offset 8: checkpoint value: field "version": unsupported value version 1 (only version 0 is understood)` + "\n"
	testGolden(t, p, append([]goldenCase{
		{name: "table", format: output.FormatTable, golden: "checkpoints.tsv", wantStderr: skippedAll},
		{name: "json", format: output.FormatJSON, golden: "checkpoints.json", wantStderr: skippedAll},
		{name: "csv", format: output.FormatCSV, golden: "checkpoints.csv", wantStderr: skippedAll},
		{name: "tty", format: output.FormatTable, tty: true, golden: "checkpoints-tty.txt", wantStderr: skippedAll},
		{name: "tsv", format: output.FormatTSV, golden: "checkpoints-header.tsv", wantStderr: skippedAll},
		{name: "latest", args: []string{"--latest"}, format: output.FormatTable, golden: "checkpoints-latest.tsv", wantStderr: skippedAll},
		{name: "latest json", args: []string{"--latest", "--source", "us-east"}, format: output.FormatJSON, golden: "checkpoints-latest.json", wantStderr: skippedAll},
		{
			// offset 4 (order-processor) is undecodable but its key matches;
			// 5 (billing) is filtered out; 6 has no key; 8 matches.
			name: "group filter", args: []string{"--group", "order-.*"}, format: output.FormatTable, golden: "checkpoints-group.tsv",
			wantStderr: "warning: 3 records skipped: " +
				`offset 4: checkpoint value: field "upstreamOffset": need 8 bytes, have 1; ` +
				`offset 6: checkpoint key: field "group": need 2 bytes, have 1; ` +
				`offset 8: checkpoint value: field "version": unsupported value version 1 (only version 0 is understood)` + "\n",
		},
		{
			// anchored: "orders" alone must not match "us-east.orders"
			name: "topic filter", args: []string{"--topic", "orders", "--latest"}, format: output.FormatCSV, golden: "checkpoints-topic.csv",
			wantStderr: `warning: 1 record skipped: offset 6: checkpoint key: field "group": need 2 bytes, have 1` + "\n",
		},
	}, widthCases("checkpoints-tty", skippedAll, "order-processor", "us-east.payments", "us-east.orders", "analytics")...), func(f *cmdutil.Factory) *cobra.Command { return NewCmdCheckpointsDump(f, nil) })
}

// TestCheckpointsLatestSemantics checks that --latest keeps the last record
// in log order per key, even when an earlier record has higher offsets, as
// MirrorClient.remoteConsumerOffsets does.
func TestCheckpointsLatestSemantics(t *testing.T) {
	p := newClusterPair(t)
	p.produce(t, "us-west", "us-east.checkpoints.internal", checkpointFixture(t))
	f, out, _ := p.factory(t, output.FormatJSON, false)
	if err := run(t, NewCmdCheckpointsDump(f, nil), "--latest", "--group", "order-processor"); err != nil {
		t.Fatal(err)
	}
	var res CheckpointsResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	type got struct {
		part           int32
		up, down, recO int64
	}
	var gots []got
	for _, c := range res.Checkpoints {
		gots = append(gots, got{c.Partition, c.UpstreamOffset, c.DownstreamOffset, c.RecordOffset})
	}
	want := []got{{0, 20, 18, 1}, {3, 1250, 1240, 7}}
	if len(gots) != len(want) || gots[0] != want[0] || gots[1] != want[1] {
		t.Fatalf("latest = %+v, want %+v", gots, want)
	}
	if res.SchemaVersion != 1 || len(res.Skipped) != 3 {
		t.Fatalf("schema_version %d, %d skipped; want 1 and 3", res.SchemaVersion, len(res.Skipped))
	}
}

func TestCheckpointsMissingTopic(t *testing.T) {
	tests := []struct {
		name    string
		extra   []string
		create  string // topic created on us-west, "" for none
		wantErr string
	}{
		{
			name:    "default separator",
			wantErr: "topic us-east.checkpoints.internal does not exist on cluster us-west; MM2 creates it when the flow us-east->us-west is enabled and its checkpoint connector runs",
		},
		{
			name:  "underscore, neither exists",
			extra: []string{"replication.policy.separator = _"},
			wantErr: "topic us-east_checkpoints_internal does not exist on cluster us-west (nor does the other naming variant us-east.checkpoints.internal); " +
				"MM2 creates it when the flow us-east->us-west is enabled and its checkpoint connector runs",
		},
		{
			name:   "underscore, dotted exists",
			extra:  []string{"replication.policy.separator = _"},
			create: "us-east.checkpoints.internal",
			wantErr: "topic us-east_checkpoints_internal does not exist on cluster us-west, but us-east.checkpoints.internal (the other internal-topic naming) does: " +
				"MM2 before 3.1, or with replication.policy.internal.topic.separator.enabled = false, names internal topics with dots; set that key to false to read it",
		},
		{
			name:   "dotted configured, separator variant exists",
			extra:  []string{"replication.policy.separator = _", "replication.policy.internal.topic.separator.enabled = false"},
			create: "us-east_checkpoints_internal",
			wantErr: "topic us-east.checkpoints.internal does not exist on cluster us-west, but us-east_checkpoints_internal (the other internal-topic naming) does: " +
				"MM2 3.1+ names internal topics with replication.policy.separator; remove replication.policy.internal.topic.separator.enabled = false to read it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newClusterPair(t, tt.extra...)
			if tt.create != "" {
				p.createTopic(t, "us-west", tt.create)
			}
			f, out, _ := p.factory(t, output.FormatTable, false)
			err := run(t, NewCmdCheckpointsDump(f, nil))
			var nf *TopicNotFoundError
			if !errors.As(err, &nf) || err.Error() != tt.wantErr {
				t.Fatalf("error = %v\nwant *TopicNotFoundError %q", err, tt.wantErr)
			}
			var fe *cmdutil.FlagError
			if errors.As(err, &fe) {
				t.Fatal("a missing topic must not be a usage error (exit 1, not 2)")
			}
			if out.Len() != 0 {
				t.Fatalf("stdout = %q, want nothing", out)
			}
		})
	}
}

// TestCheckpointsSeparatorNaming reads the topic under the configured
// separator (KIP-690) and under the KIP-949 dotted opt-out.
func TestCheckpointsSeparatorNaming(t *testing.T) {
	tests := []struct {
		extra []string
		topic string
	}{
		{[]string{"replication.policy.separator = _"}, "us-east_checkpoints_internal"},
		{[]string{"replication.policy.separator = _", "replication.policy.internal.topic.separator.enabled = false"}, "us-east.checkpoints.internal"},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			p := newClusterPair(t, tt.extra...)
			p.produce(t, "us-west", tt.topic, []rec{cpRec(t, mm2.Checkpoint{Group: "g", Topic: "us-east_orders", Partition: 1, UpstreamOffset: 3, DownstreamOffset: 2}, t0)})
			f, out, _ := p.factory(t, output.FormatTable, false)
			if err := run(t, NewCmdCheckpointsDump(f, nil)); err != nil {
				t.Fatal(err)
			}
			if want := "g\tus-east_orders\t1\t3\t2\t\t2024-05-01T12:00:00.123Z\t0\n"; out.String() != want {
				t.Fatalf("stdout = %q, want %q", out, want)
			}
		})
	}
}

func TestResolveFlow(t *testing.T) {
	p := newClusterPair(t)
	tests := []struct {
		name           string
		lines          []string
		source, target string
		want           string
		wantErr        string
	}{
		{name: "one enabled flow", lines: []string{"us-east->us-west.enabled = true"}, want: "us-east->us-west"},
		{name: "source given", lines: []string{"us-east->us-west.enabled = true", "us-west->us-east.enabled = true"}, source: "us-west", want: "us-west->us-east"},
		{name: "target given", lines: []string{"us-east->us-west.enabled = true", "us-west->us-east.enabled = true"}, target: "us-west", want: "us-east->us-west"},
		{name: "both given, disabled flow", lines: []string{"us-east->us-west.enabled = true"}, source: "us-west", target: "us-east", want: "us-west->us-east"},
		{
			name: "two enabled", lines: []string{"us-east->us-west.enabled = true", "us-west->us-east.enabled = true"},
			wantErr: "mm2.properties enables 2 flows (us-east->us-west, us-west->us-east); choose one with --source and --target",
		},
		{
			name:    "none enabled",
			wantErr: "mm2.properties enables no flow; choose one with --source and --target (flows: us-east->us-west, us-west->us-east)",
		},
		{
			name: "none from source", lines: []string{"us-east->us-west.enabled = true"}, source: "us-west",
			wantErr: "mm2.properties enables, from us-west, no flow; choose one with --source and --target (flows: us-east->us-west, us-west->us-east)",
		},
		{name: "unknown cluster", source: "eu-central", wantErr: "--source eu-central: no such cluster in mm2.properties (clusters: us-east, us-west)"},
		{name: "same cluster", source: "us-east", target: "us-east", wantErr: "no flow us-east->us-east in mm2.properties: source and target must be different clusters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p.writeConfig(t, tt.lines...)
			f, _, _ := p.factory(t, output.FormatTable, false)
			cfg, err := f.Config()
			if err != nil {
				t.Fatal(err)
			}
			cfg.File = "mm2.properties" // stable messages
			fl, err := cmdutil.ResolveFlow(cfg, tt.source, tt.target)
			if tt.wantErr != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || err.Error() != tt.wantErr {
					t.Fatalf("error = %v\nwant *FlagError %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fl.Name() != tt.want {
				t.Fatalf("flow = %s, want %s", fl.Name(), tt.want)
			}
		})
	}
}

// TestCheckpointsNoDefaultFlow runs the command with two enabled flows and
// no --source/--target: a usage error, before any cluster is contacted.
func TestCheckpointsNoDefaultFlow(t *testing.T) {
	p := newClusterPair(t, "us-west->us-east.enabled = true")
	f, _, _ := p.factory(t, output.FormatTable, false)
	err := run(t, NewCmdCheckpointsDump(f, nil))
	var fe *cmdutil.FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "enables 2 flows (us-east->us-west, us-west->us-east)") {
		t.Fatalf("error = %v, want a *FlagError listing both flows", err)
	}
}
