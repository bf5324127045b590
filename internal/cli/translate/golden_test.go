package translate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/cli/clitest"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// clusters counts the clusters started, so each has its own cluster ID (the
// mirror refuses two aliases of one ID, and kfake's default is "kfake").
var clusters atomic.Int32

func cluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0), kfake.ClusterID(fmt.Sprintf("golden-%d", clusters.Add(1))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Golden outputs of `mirrorctl translate`: piped TSV, the aligned terminal
// table and JSON, over two groups on a two-partition topic mirrored once
// (fixed partitions, keys, values and timestamps, so offsets are fixed).
func TestTranslateGolden(t *testing.T) {
	ctx := context.Background()
	east, west := cluster(t), cluster(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "mm2.properties")
	props := fmt.Sprintf("clusters = us-east, eu-west\nus-east.bootstrap.servers = %s\neu-west.bootstrap.servers = %s\n"+
		"us-east->eu-west.enabled = true\nreplication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"+
		"heartbeats.topic.replication.factor = 1\ncheckpoints.topic.replication.factor = 1\nemit.heartbeats.enabled = false\n",
		strings.Join(east.ListenAddrs(), ","), strings.Join(west.ListenAddrs(), ","))
	if err := os.WriteFile(config, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(east.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < 8; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Partition: p, Key: []byte(fmt.Sprint("k", i%3)),
				Value: []byte(fmt.Sprintf("v%d-%d", p, i)), Timestamp: base.Add(time.Duration(i) * time.Second)})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// billing is mid-log on partition 0 and has no commit on partition 1;
	// audit is at the end of both.
	billing, audit := kadm.Offsets{}, kadm.Offsets{}
	billing.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 3, LeaderEpoch: -1})
	audit.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 8, LeaderEpoch: -1})
	audit.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 8, LeaderEpoch: -1})
	commits := map[string]kadm.Offsets{"billing": billing, "audit": audit}
	for g, o := range commits {
		if _, err := adm.CommitOffsets(ctx, g, o); err != nil {
			t.Fatal(err)
		}
	}
	width := 160
	errTTY := false
	run := func(tty bool, args ...string) (int, string, string) {
		ios, _, out, errOut := iostreams.Test()
		ios.SetStdoutTTY(tty)
		ios.SetStderrTTY(errTTY)
		ios.SetColorDisabled(true)
		ios.SetTerminalWidth(width)
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		code := cli.Run(rctx, ios, append([]string{"-c", config, "--audit-log", filepath.Join(dir, "audit.jsonl")}, args...), nil)
		return code, out.String(), errOut.String()
	}
	if code, _, stderr := run(false, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: %d %s", code, stderr)
	}
	// On a terminal, exact translation draws a bar per phase of reads on
	// stderr and erases it; stdout is the same table.
	t.Run("progress", func(t *testing.T) {
		errTTY = true
		defer func() { errTTY = false }()
		code, stdout, stderr := run(true, "translate", "--group", "billing", "--group", "audit", "--mode", "exact")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		for _, want := range []string{"reading us-east", "reading eu-west", "0/3", "partitions", "\x1b[2K"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q: %q", want, stderr)
			}
		}
		if strings.Contains(stderr, "✓") || strings.Contains(stderr, "\n") {
			t.Errorf("progress left a line or a success mark on stderr: %q", stderr)
		}
		clitest.Golden(t, "translate-tty.txt", stdout)
	})
	for _, tt := range []struct {
		golden string
		tty    bool
		width  int
		args   []string
	}{
		{golden: "translate.tsv"},
		{golden: "translate-tty.txt", tty: true},
		{golden: "translate-tty-80.txt", tty: true, width: 80},
		{golden: "translate-tty-100.txt", tty: true, width: 100},
		{golden: "translate-tty-200.txt", tty: true, width: 200},
		{golden: "translate-header.tsv", args: []string{"-o", "tsv"}},
		{golden: "translate.json", args: []string{"-o", "json"}},
		{golden: "translate-exact.csv", args: []string{"--mode", "exact", "-o", "csv"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			width = 160
			if tt.width > 0 {
				width = tt.width
			}
			code, stdout, stderr := run(tt.tty, append([]string{"translate", "--group", "billing", "--group", "audit"}, tt.args...)...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			clitest.Golden(t, tt.golden, stdout)
			if tt.tty { // identity columns are never cut at any width
				for _, id := range []string{"billing", "audit", "us-east.orders"} {
					if !strings.Contains(stdout, id+" ") {
						t.Errorf("width %d: %q cut:\n%s", width, id, stdout)
					}
				}
				if strings.Contains(stdout, "billin…") || strings.Contains(stdout, "us-east.or…") {
					t.Errorf("width %d: an identity column was cut:\n%s", width, stdout)
				}
			}
		})
	}
	// A checkpoint no mirror could have written (downstream 2^50, past the
	// end of the remote topic) is printed as read, flagged, and exits 3
	// unless --allow-out-of-range.
	t.Run("out of range", func(t *testing.T) {
		wcl, err := kgo.NewClient(kgo.SeedBrokers(west.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer wcl.Close()
		ck := mm2.Checkpoint{Group: "bogus", Topic: "us-east.orders", Partition: 0, UpstreamOffset: 3, DownstreamOffset: 1 << 50}
		k, _ := ck.MarshalKey()
		v, _ := ck.MarshalValue()
		if err := wcl.ProduceSync(ctx, &kgo.Record{Topic: "us-east.checkpoints.internal", Key: k, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want := "offset 1125899906842624 is past the end 8 of us-east.orders[0] on eu-west by 1125899906842616: not a position there (a bad checkpoint?)"
		code, stdout, stderr := run(false, "translate", "--group", "bogus", "--mode", "checkpoint", "-o", "json")
		if code != 3 || !strings.Contains(stderr, "error: group bogus us-east.orders[0]: "+want) {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		if !strings.Contains(stdout, `"target_offset": 1125899906842624`) || !strings.Contains(stdout, `"out_of_range": "`+want+`"`) {
			t.Errorf("JSON does not carry the row as read with out_of_range:\n%s", stdout)
		}
		code, stdout, stderr = run(false, "translate", "--group", "bogus", "--mode", "checkpoint", "--allow-out-of-range")
		if code != 0 || !strings.Contains(stderr, "warning: group bogus us-east.orders[0]: "+want) || !strings.Contains(stdout, "out of range: "+want) {
			t.Fatalf("--allow-out-of-range: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}
