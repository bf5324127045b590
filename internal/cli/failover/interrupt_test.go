package failover_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
)

// Ctrl-C during `failover --apply`: exit 130, the audit log's end entry says
// "interrupted" and lists, per group, exactly what the target then holds, and
// a re-run finishes the job.
func TestInterruptedApplyIsAuditedAndResumable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	east, west := e.Admin(t, "us-east"), e.Admin(t, "eu-west")
	if _, err := east.CreateTopic(ctx, 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(e.East.ListenAddrs()...), kgo.DefaultProduceTopic("orders"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 60; i++ {
		if err := pcl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint("v", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	pcl.Close()
	// Forty groups, so the interrupt usually lands with some not yet
	// committed (the engine applies eight at a time); whatever the timing,
	// the audit must match the target.
	groups := map[string]int64{}
	var names []string
	for i := 0; i < 40; i++ {
		g := fmt.Sprintf("g-%02d", i)
		groups[g] = int64(1 + i)
		names = append(names, g)
	}
	for g, at := range groups {
		if _, err := east.CommitOffsets(ctx, g, kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: at - 1})); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := e.run(t, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: %d %s", code, stderr)
	}

	// Cancel the run as the first offset commit reaches the target.
	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var commits atomic.Int32
	e.West.ControlKey(int16(kmsg.OffsetCommit), func(kmsg.Request) (kmsg.Response, error, bool) {
		if commits.Add(1) == 1 {
			cancel()
		}
		return nil, nil, false
	})
	ios, _, _, errOut := iostreams.Test()
	args := []string{"-c", e.config, "--audit-log", e.audit, "failover", "--apply", "--mode", "exact"}
	for _, g := range names {
		args = append(args, "--group", g)
	}
	if code := cli.Run(runCtx, ios, args, nil); code != 130 {
		t.Fatalf("interrupted apply: exit %d, want 130: %s", code, errOut.String())
	}

	entries, err := audit.Read(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Kind != audit.KindBegin || entries[1].Kind != audit.KindEnd || entries[1].Status != audit.StatusInterrupted {
		t.Fatalf("audit entries: %+v", entries)
	}
	var ended struct {
		Groups []struct {
			Group      string `json:"group"`
			Partitions []struct {
				Topic   string `json:"topic"`
				Outcome string `json:"outcome"`
				Target  *int64 `json:"target_offset"`
			} `json:"partitions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(entries[1].Data, &ended); err != nil {
		t.Fatalf("end entry data: %v: %s", err, entries[1].Data)
	}
	committed := 0
	for _, g := range ended.Groups {
		offs, err := west.FetchOffsets(ctx, g.Group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			offs, err = nil, nil // kfake's answer for a group with no commits
		}
		if err != nil {
			t.Fatal(err)
		}
		o, has := offs.Lookup("us-east.orders", 0)
		p := g.Partitions[0]
		switch p.Outcome {
		case "committed":
			committed++
			if !has || p.Target == nil || o.At != *p.Target || o.At != groups[g.Group] {
				t.Errorf("group %s: audit says committed %v, target holds %+v (present %v)", g.Group, p.Target, o, has)
			}
		default:
			if has && o.At >= 0 {
				t.Errorf("group %s: audit says %q, but the target holds a commit at %d", g.Group, p.Outcome, o.At)
			}
		}
	}
	if len(ended.Groups) != len(groups) {
		t.Fatalf("the end entry lists %d groups, want %d", len(ended.Groups), len(groups))
	}
	t.Logf("%d of %d groups committed before the interrupt", committed, len(groups))

	// The re-run commits the rest and leaves the committed ones unchanged.
	rerun := []string{"failover", "--apply", "--mode", "exact"}
	for _, g := range names {
		rerun = append(rerun, "--group", g)
	}
	code, stdout, stderr := e.run(t, rerun...)
	if code != 0 {
		t.Fatalf("re-run: exit %d: %s %s", code, stdout, stderr)
	}
	for g, at := range groups {
		offs, err := west.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := offs.Lookup("us-east.orders", 0); o.At != at {
			t.Errorf("after the re-run group %s is at %d, want %d", g, o.At, at)
		}
	}
	if n, err := audit.Verify(e.audit); err != nil || len(n) != 0 {
		t.Fatalf("audit verify: %v %v", n, err)
	}
}
