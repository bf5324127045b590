package dump

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"

	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

func TestNewCmdHeartbeatsDump(t *testing.T) {
	testFlags(t, []flagCase[HeartbeatsOptions]{
		{args: []string{}},
		{
			args: []string{"--cluster", "us-west", "--source-alias", "us-.*", "--target-alias", "us-west", "--latest"},
			want: HeartbeatsOptions{Common: Common{Latest: true}, Cluster: "us-west", SourceAlias: "us-.*", TargetAlias: "us-west"},
		},
		{args: []string{"--source", "us-east"}, want: HeartbeatsOptions{Common: Common{Source: "us-east"}}},
		{args: []string{"--cluster", "us-west", "--target", "us-west"}, wantErr: "--cluster cannot be used with --source or --target"},
		{args: []string{"--source-alias", "("}, wantErr: "--source-alias \"(\": error parsing regexp: missing closing ): `^(?:()$`"},
	}, NewCmdHeartbeatsDump, func(o *HeartbeatsOptions) any {
		return [...]any{o.Source, o.Target, o.Latest, o.Cluster, o.SourceAlias, o.TargetAlias}
	})
}

func heartbeatFixture(t testing.TB) []rec {
	hb := func(s, tgt string, sec int64) rec {
		return hbRec(t, mm2.Heartbeat{SourceAlias: s, TargetAlias: tgt, Timestamp: t0.UnixMilli() + sec*1000})
	}
	bad := must(mm2.Heartbeat{SourceAlias: "us-east", TargetAlias: "us-west"}.MarshalKey())
	return []rec{
		0: hb("us-east", "us-west", 0),
		1: hb("eu-central", "us-west", 0),
		2: hb("us-east", "us-west", 1),
		3: {Key: bad, Value: []byte{0, 0, 0, 0, 1}, At: t0}, // truncated timestamp
		4: hb("eu-central", "us-west", 1),
		5: {Key: []byte("garbage"), Value: []byte{0}, At: t0},
		6: hb("us-east", "us-west", 2),
	}
}

func TestHeartbeatsDump(t *testing.T) {
	p := newClusterPair(t)
	p.produce(t, "us-west", "heartbeats", heartbeatFixture(t))
	p.produce(t, "us-east", "heartbeats", []rec{hbRec(t, mm2.Heartbeat{SourceAlias: "us-west", TargetAlias: "us-east", Timestamp: t0.UnixMilli()})})

	const skipped = "warning: 2 records skipped: " +
		`offset 3: heartbeat value: field "timestamp": need 8 bytes, have 3; ` +
		`offset 5: heartbeat key: field "sourceClusterAlias": need 26465 bytes, have 5` + "\n"
	testGolden(t, p, append([]goldenCase{
		{name: "table", format: output.FormatTable, golden: "heartbeats.tsv", wantStderr: skipped},
		{name: "json", format: output.FormatJSON, golden: "heartbeats.json", wantStderr: skipped},
		{name: "csv", format: output.FormatCSV, golden: "heartbeats.csv", wantStderr: skipped},
		{name: "tty", format: output.FormatTable, tty: true, golden: "heartbeats-tty.txt", wantStderr: skipped},
		{name: "tsv", format: output.FormatTSV, golden: "heartbeats-header.tsv", wantStderr: skipped},
		{name: "latest", args: []string{"--latest"}, format: output.FormatTable, golden: "heartbeats-latest.tsv", wantStderr: skipped},
		{
			name: "source alias filter", args: []string{"--source-alias", "eu-.*", "--cluster", "us-west"}, format: output.FormatCSV, golden: "heartbeats-eu.csv",
			wantStderr: `warning: 1 record skipped: offset 5: heartbeat key: field "sourceClusterAlias": need 26465 bytes, have 5` + "\n",
		},
		{name: "other cluster", args: []string{"--cluster", "us-east"}, format: output.FormatCSV, golden: "heartbeats-us-east.csv"},
	}, widthCases("heartbeats-tty", skipped, "eu-central", "us-east", "us-west")...), func(f *cmdutil.Factory) *cobra.Command { return NewCmdHeartbeatsDump(f, nil) })
}

func TestHeartbeatsErrors(t *testing.T) {
	p := newClusterPair(t)
	tests := []struct {
		name      string
		args      []string
		wantErr   string
		wantUsage bool
	}{
		{name: "missing topic", args: []string{"--cluster", "us-east"},
			wantErr: "topic heartbeats does not exist on cluster us-east; MM2 creates it on the target of every flow with emit.heartbeats.enabled = true"},
		{name: "missing topic, flow", args: nil,
			wantErr: "topic heartbeats does not exist on cluster us-west; MM2 creates it on us-west when us-east->us-west has emit.heartbeats.enabled = true"},
		{name: "unknown cluster", args: []string{"--cluster", "eu"}, wantUsage: true,
			wantErr: "--cluster eu: no such cluster in " + p.path + " (clusters: us-east, us-west)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := p.factory(t, output.FormatTable, false)
			err := run(t, NewCmdHeartbeatsDump(f, nil), tt.args...)
			if err == nil || err.Error() != tt.wantErr {
				t.Fatalf("error = %v\nwant %q", err, tt.wantErr)
			}
			var fe *cmdutil.FlagError
			if errors.As(err, &fe) != tt.wantUsage {
				t.Fatalf("usage error = %v, want %v", !tt.wantUsage, tt.wantUsage)
			}
		})
	}
}
