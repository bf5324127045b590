package failover_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/audit"
)

func lastAudit(t *testing.T, path string) audit.Entry {
	t.Helper()
	entries, err := audit.Read(path)
	if err != nil || len(entries) == 0 {
		t.Fatalf("audit log: %v (%d entries)", err, len(entries))
	}
	return entries[len(entries)-1]
}

// No silent success: a named group with nothing to move, a skip-rewind and
// a partition not yet replicated each exit 3 with a message and a summary
// line per group; --allow-empty accepts a group with nothing to move.
func TestNoSilentSuccess(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4, "ahead": 4})
	west := e.Admin(t, "eu-west")
	ctx := context.Background()

	// A typo: exit 3, JSON says applied but incomplete, audit not ok.
	code, stdout, stderr := e.run(t, "failover", "--group", "biling", "--apply", "--verify", "--yes", "-o", "json")
	if code != 3 || !strings.Contains(stderr, "group biling has no committed offset to move") || !strings.Contains(stderr, "group biling: nothing to move — incomplete") {
		t.Fatalf("typo: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		SchemaVersion int  `json:"schema_version"`
		Applied       bool `json:"applied"`
		Groups        []struct {
			Summary    string   `json:"summary"`
			Incomplete []string `json:"incomplete"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.SchemaVersion != 1 || !doc.Applied || len(doc.Groups) != 1 || len(doc.Groups[0].Incomplete) != 1 {
		t.Fatalf("typo JSON: %v %s", err, stdout)
	}
	if a := lastAudit(t, e.audit); a.Status == audit.StatusOK {
		t.Fatalf("typo audited as %s", a.Status)
	}
	if code, _, stderr := e.run(t, "failover", "--group", "biling", "--apply", "--allow-empty"); code != 0 || !strings.Contains(stderr, "group biling: nothing to move") {
		t.Fatalf("--allow-empty: exit %d %s", code, stderr)
	}
	// translate too.
	if code, _, stderr := e.run(t, "translate", "--group", "biling"); code != 3 || !strings.Contains(stderr, "group biling has no committed offset") {
		t.Fatalf("translate typo: exit %d %s", code, stderr)
	}
	if code, _, _ := e.run(t, "translate", "--group", "biling", "--allow-empty"); code != 0 {
		t.Fatalf("translate --allow-empty: exit %d", code)
	}

	// skip-rewind on --apply: exit 3, says by how much the target is ahead.
	if _, err := west.CommitOffsets(ctx, "ahead", kadm.OffsetsFromRecords(kgo.Record{Topic: "us-east.orders", Partition: 1, Offset: 8})); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.run(t, "failover", "--group", "ahead", "--apply")
	if code != 3 || !strings.Contains(stderr, "us-east.orders[1]: the group's offset on eu-west is 9, 5 ahead of the translated 4; not lowered without --allow-rewind") ||
		!strings.Contains(stderr, "group ahead: committed 1, skip-rewind 1 — incomplete") {
		t.Fatalf("skip-rewind: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if a := lastAudit(t, e.audit); a.Status != audit.StatusPartial {
		t.Fatalf("skip-rewind audited as %s", a.Status)
	}

	// A position not yet replicated: exit 3 for the apply that committed
	// the rest.
	pcl, err := kgo.NewClient(kgo.SeedBrokers(e.East.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Partition: 0, Value: []byte("late"), Timestamp: time.Now()}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	east := e.Admin(t, "us-east")
	if _, err := east.CommitOffsets(ctx, "late", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: 9}, kgo.Record{Topic: "orders", Partition: 1, Offset: 4})); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.run(t, "failover", "--group", "late", "--apply")
	if code != 3 || !strings.Contains(stderr, "us-east.orders[0]: not yet replicated") || !strings.Contains(stderr, "group late: committed 1, skip-not-replicated 1 — incomplete") {
		t.Fatalf("not replicated: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// Draining first does not help while the mirror is stopped: refused
	// when the time is up, with what is missing.
	code, _, stderr = e.run(t, "failover", "--group", "late", "--wait-caught-up", "300ms", "--apply")
	if code != 3 || !strings.Contains(stderr, "group late is not caught up after waiting 300ms: us-east.orders[0]: ") {
		t.Fatalf("--wait-caught-up: exit %d %s", code, stderr)
	}

	// A complete move: exit 0 and its summary line.
	code, _, stderr = e.run(t, "failover", "--group", "billing", "--apply")
	if code != 0 || !strings.Contains(stderr, "group billing: committed 2\n") {
		t.Fatalf("billing: exit %d %s", code, stderr)
	}
}
