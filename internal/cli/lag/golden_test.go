package lag_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/cli/cmdutil"
	"github.com/mirrorctl/mirrorctl/internal/cli/lag"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/output"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// Golden outputs of `mirrorctl lag` over what an MM2 flow leaves behind
// (offset syncs, heartbeats, a checkpoint; no mirrorctl group, so the
// owner is unknown) at a pinned clock: the terminal tables at 80, 100 and
// 200 columns with the identity columns whole, piped, tsv, csv and json.
// Each run breaches (--stale-after, --max-records), so exits 3.
func TestLagGolden(t *testing.T) {
	e := newEnv(t, "")
	const topic, remote, group = "payments", "us-east.payments", "billing-reconciliation"
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	e.CreateTopic(t, "us-east", topic, 2, nil)
	e.CreateTopic(t, "eu-west", remote, 2, nil)
	e.CreateTopic(t, "us-east", "mm2-offset-syncs.eu-west.internal", 1, nil)
	e.CreateTopic(t, "eu-west", "heartbeats", 1, nil)
	e.CreateTopic(t, "eu-west", "us-east.checkpoints.internal", 1, nil)
	var src, dst []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 20; i++ {
			src = append(src, &kgo.Record{Topic: topic, Partition: p, Value: []byte("x"), Timestamp: now.Add(time.Duration(i-100) * time.Second)})
		}
		for i := 0; i < 12+int(p)*8; i++ { // partition 1 is copied to its end
			dst = append(dst, &kgo.Record{Topic: remote, Partition: p, Value: []byte("x")})
		}
	}
	cl := e.Client(t, "us-east", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(context.Background(), src...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	wl := e.Client(t, "eu-west", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := wl.ProduceSync(context.Background(), dst...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for p, up := range []int64{4, 19} {
		sync := mm2.OffsetSync{Topic: topic, Partition: int32(p), UpstreamOffset: up, DownstreamOffset: up}
		k, _ := sync.MarshalKey()
		v, _ := sync.MarshalValue()
		e.Produce(t, "us-east", &kgo.Record{Topic: "mm2-offset-syncs.eu-west.internal", Key: k, Value: v})
	}
	hb := mm2.Heartbeat{SourceAlias: "us-east", TargetAlias: "eu-west", Timestamp: now.Add(-3 * time.Second).UnixMilli()}
	k, _ := hb.MarshalKey()
	v, _ := hb.MarshalValue()
	e.Produce(t, "eu-west", &kgo.Record{Topic: "heartbeats", Key: k, Value: v, Timestamp: now.Add(-3 * time.Second)})
	ck := mm2.Checkpoint{Group: group, Topic: remote, Partition: 0, UpstreamOffset: 8, DownstreamOffset: 6}
	k, _ = ck.MarshalKey()
	v, _ = ck.MarshalValue()
	e.Produce(t, "eu-west", &kgo.Record{Topic: "us-east.checkpoints.internal", Key: k, Value: v, Timestamp: now.Add(-4 * time.Second)})
	if _, err := kadm.NewClient(e.Client(t, "us-east")).CommitOffsets(context.Background(), group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 11})); err != nil {
		t.Fatal(err)
	}

	runAt := func(t *testing.T, tty bool, width int, format output.Format) string {
		opts, _ := e.options(t, now)
		ios, _, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(tty)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(width)
		opts.IO = ios
		opts.Output = func() output.Format { return format }
		opts.Groups = []string{group}
		opts.StaleAfter = 3500 * time.Millisecond
		opts.MaxRecords = 5
		if err := lag.Run(context.Background(), opts); !errors.Is(err, cmdutil.ErrCheckFailed) {
			t.Fatalf("lag: %v, want the check failed (exit 3); stderr %s", err, errOut)
		}
		return out.String()
	}
	clitest.GoldenWidths(t, "lag-tty", func(t *testing.T, width int) string { return runAt(t, true, width, output.FormatTable) },
		"us-east->eu-west", remote, group)
	for _, tt := range []struct {
		golden string
		format output.Format
	}{
		{"lag.txt", output.FormatTable},
		{"lag.tsv", output.FormatTSV},
		{"lag.csv", output.FormatCSV},
		{"lag.json", output.FormatJSON},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			got := runAt(t, false, 80, tt.format)
			clitest.Golden(t, tt.golden, got)
			if !bytes.Contains([]byte(got), []byte(group)) {
				t.Fatalf("%s lacks the group: %s", tt.golden, got)
			}
		})
	}
}
