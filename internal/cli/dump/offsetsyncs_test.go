package dump

import (
	"errors"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

func TestNewCmdOffsetSyncsDump(t *testing.T) {
	testFlags(t, []flagCase[OffsetSyncsOptions]{
		{args: []string{}},
		{
			args: []string{"--source", "us-east", "--target", "us-west", "--topic", "orders|payments", "--latest"},
			want: OffsetSyncsOptions{Common: Common{Source: "us-east", Target: "us-west", Latest: true}, Topic: "orders|payments"},
		},
		{args: []string{"--topic", "*"}, wantErr: "--topic \"*\": error parsing regexp: missing argument to repetition operator: `*`"},
		{args: []string{"--group", "g"}, wantErr: "unknown flag: --group", cobraErr: true},
	}, NewCmdOffsetSyncsDump, func(o *OffsetSyncsOptions) any { return [...]any{o.Source, o.Target, o.Latest, o.Topic} })
}

func offsetSyncFixture(t testing.TB) []rec {
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	s := func(topic string, p int32, up, down int64) mm2.OffsetSync {
		return mm2.OffsetSync{Topic: topic, Partition: p, UpstreamOffset: up, DownstreamOffset: down}
	}
	return []rec{
		0: osRec(t, s("orders", 3, 1234, 1200), at(0)),
		1: osRec(t, s("orders", 0, 0, 0), at(1)),
		2: {Key: must(s("orders", 1, 0, 0).MarshalKey()), Value: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, At: at(2)}, // short value
		3: osRec(t, s("payments", 0, 50, 48), at(3)),
		4: osRec(t, s("orders", 3, 1500, 1460), at(4)),
		5: {Key: must(s("payments", 1, 0, 0).MarshalKey()), Value: nil, At: at(5)}, // tombstone
		6: osRec(t, s("orders", 3, 1400, 1390), at(6)),
	}
}

func TestOffsetSyncsDump(t *testing.T) {
	p := newClusterPair(t)
	// Default location (source): mm2-offset-syncs.<target>.internal on the source.
	p.produce(t, "us-east", "mm2-offset-syncs.us-west.internal", offsetSyncFixture(t))

	const skipped = "warning: 2 records skipped: " +
		`offset 2: offset-sync value: field "offset": need 8 bytes, have 1; ` +
		"offset 5: offset-sync value: null (tombstone)\n"
	testGolden(t, p, append([]goldenCase{
		{name: "table", format: output.FormatTable, golden: "offset-syncs.tsv", wantStderr: skipped},
		{name: "json", format: output.FormatJSON, golden: "offset-syncs.json", wantStderr: skipped},
		{name: "csv", format: output.FormatCSV, golden: "offset-syncs.csv", wantStderr: skipped},
		{name: "tty", format: output.FormatTable, tty: true, golden: "offset-syncs-tty.txt", wantStderr: skipped},
		{name: "tsv", format: output.FormatTSV, golden: "offset-syncs-header.tsv", wantStderr: skipped},
		{name: "latest", args: []string{"--latest"}, format: output.FormatTable, golden: "offset-syncs-latest.tsv", wantStderr: skipped},
		{
			name: "topic filter", args: []string{"--topic", "pay.*", "--source", "us-east", "--target", "us-west"}, format: output.FormatCSV, golden: "offset-syncs-topic.csv",
			wantStderr: "warning: 1 record skipped: offset 5: offset-sync value: null (tombstone)\n",
		},
	}, widthCases("offset-syncs-tty", skipped, "orders")...), func(f *cmdutil.Factory) *cobra.Command { return NewCmdOffsetSyncsDump(f, nil) })
}

// TestOffsetSyncsLocation reads the topic where offset-syncs.topic.location
// puts it (KIP-716), and names the location in the missing-topic error.
func TestOffsetSyncsLocation(t *testing.T) {
	tests := []struct {
		name          string
		extra         []string
		alias, topic  string
		wantMissing   string
		produceRecord bool
	}{
		{
			name: "target location", extra: []string{"offset-syncs.topic.location = target"},
			alias: "us-west", topic: "mm2-offset-syncs.us-east.internal", produceRecord: true,
		},
		{
			name: "separator", extra: []string{"replication.policy.separator = _"},
			alias: "us-east", topic: "mm2-offset-syncs_us-west_internal", produceRecord: true,
		},
		{
			name: "missing at target location", extra: []string{"offset-syncs.topic.location = target"},
			wantMissing: "topic mm2-offset-syncs.us-east.internal does not exist on cluster us-west; offset-syncs.topic.location is target for us-east->us-west; " +
				"it must match the MM2 that wrote the syncs, and emit.offset-syncs.enabled must be true there",
		},
		{
			name: "missing, exists at the other location", alias: "us-east", topic: "mm2-offset-syncs.us-west.internal",
			extra: []string{"offset-syncs.topic.location = target"},
			wantMissing: "topic mm2-offset-syncs.us-east.internal does not exist on cluster us-west; " +
				"mm2-offset-syncs.us-west.internal exists on cluster us-east: set offset-syncs.topic.location = source for us-east->us-west to read it",
		},
		{
			name: "missing, dotted variant exists", extra: []string{"replication.policy.separator = _"},
			alias: "us-east", topic: "mm2-offset-syncs.us-west.internal",
			wantMissing: "topic mm2-offset-syncs_us-west_internal does not exist on cluster us-east, but mm2-offset-syncs.us-west.internal (the other internal-topic naming) does: " +
				"MM2 before 3.1, or with replication.policy.internal.topic.separator.enabled = false, names internal topics with dots; set that key to false to read it",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newClusterPair(t, tt.extra...)
			if tt.produceRecord {
				p.produce(t, tt.alias, tt.topic, []rec{osRec(t, mm2.OffsetSync{Topic: "orders", Partition: 2, UpstreamOffset: 7, DownstreamOffset: 6}, t0)})
			} else if tt.topic != "" {
				p.createTopic(t, tt.alias, tt.topic)
			}
			f, out, _ := p.factory(t, output.FormatTable, false)
			err := run(t, NewCmdOffsetSyncsDump(f, nil))
			if tt.wantMissing != "" {
				var nf *TopicNotFoundError
				if !errors.As(err, &nf) || err.Error() != tt.wantMissing {
					t.Fatalf("error = %v\nwant %q", err, tt.wantMissing)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := "orders\t2\t7\t6\t2024-05-01T12:00:00.123Z\t0\n"; out.String() != want {
				t.Fatalf("stdout = %q, want %q", out, want)
			}
		})
	}
}
