package failover_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/audit"
)

// The failback runbook with eu-west down: replicate with reverse
// checkpoints on, the group consumes on eu-west, eu-west stops; `checkpoints
// dump` shows the reverse checkpoints on us-east, `failback --mode
// checkpoint --apply` commits them there (exit 0, audited), and a group with
// no reverse checkpoint exits 3 with nothing committed.
func TestFailbackCheckpointModeCommand(t *testing.T) {
	e := newEnvWith(t, "us-east->eu-west.mirrorctl.reverse.checkpoints.enabled = true\n")
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	ctx := context.Background()
	west := e.Admin(t, "eu-west")
	// billing consumed to the end on eu-west after the failover.
	if _, err := west.CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "us-east.orders", Partition: 0, Offset: 9}, kgo.Record{Topic: "us-east.orders", Partition: 1, Offset: 9})); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := e.run(t, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: %d %s", code, stderr)
	}
	code, stdout, stderr := e.run(t, "checkpoints", "dump", "--source", "eu-west", "--target", "us-east", "--group", "billing", "--latest", "-o", "json")
	if code != 0 || !strings.Contains(stdout, `"topic": "orders"`) || !strings.Contains(stdout, `"downstream_offset": 10`) {
		t.Fatalf("checkpoints dump of the reverse checkpoints: exit %d\n%s\n%s", code, stdout, stderr)
	}
	e.West.Close()

	code, stdout, stderr = e.run(t, "failback", "--group", "billing", "--mode", "checkpoint", "--apply", "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("failback --mode checkpoint: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		Groups []struct {
			Partitions []jsonRow `json:"partitions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Groups) != 1 || len(doc.Groups[0].Partitions) != 2 {
		t.Fatalf("JSON %v\n%s", err, stdout)
	}
	for _, r := range doc.Groups[0].Partitions {
		if r.Mode != "checkpoint" || r.Outcome != "committed" || r.Source == nil || *r.Source != 10 || r.SourceT != "orders" {
			t.Fatalf("row %+v\n%s", r, stdout)
		}
	}
	east := e.Admin(t, "us-east")
	offs, err := east.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 2; p++ {
		if o, _ := offs.Lookup("orders", p); o.At != 10 {
			t.Fatalf("billing orders[%d] at %d on us-east, want 10", p, o.At)
		}
	}
	if a := lastAudit(t, e.audit); a.Status != audit.StatusOK {
		t.Fatalf("audited as %s", a.Status)
	}

	// No reverse checkpoint and eu-west down: unknown, exit 3.
	code, _, stderr = e.run(t, "failback", "--group", "ledger", "--mode", "checkpoint", "--apply", "--yes", "--allow-empty")
	if code != 3 || !strings.Contains(stderr, "no reverse checkpoint for group ledger in eu-west.checkpoints.internal on us-east, and eu-west does not answer") {
		t.Fatalf("no reverse checkpoint: exit %d %s", code, stderr)
	}
	if _, err := east.FetchOffsets(ctx, "ledger"); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("ledger on us-east: %v, want no group", err)
	}
}
