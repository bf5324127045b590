package failover_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// --plan-out saves the plan and the state it was made from; --from-plan
// --apply applies exactly that plan, and refuses a group committed to
// concurrently on the target (or moved on the source) since.
func TestSavedPlanRefusesChangedGroups(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4, "ledger": 4, "audit": 4})
	planFile := filepath.Join(t.TempDir(), "plan.json")
	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--group", "ledger", "--group", "audit", "--plan-out", planFile)
	if code != 0 || !strings.Contains(stderr, "plan saved to "+planFile) {
		t.Fatalf("plan-out: exit %d %s %s", code, stdout, stderr)
	}
	if fi, err := os.Stat(planFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("plan file: %v %v", fi, err)
	}
	if _, err := os.Stat(e.audit); err == nil {
		t.Fatal("--plan-out wrote to the audit log")
	}
	ctx := context.Background()
	// A concurrent commit of ledger on the target, and audit moving on the
	// source, after the plan was saved.
	if _, err := e.Admin(t, "eu-west").CommitOffsets(ctx, "ledger", kadm.OffsetsFromRecords(kgo.Record{Topic: "us-east.orders", Partition: 0, Offset: 1})); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin(t, "us-east").CommitOffsets(ctx, "audit", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 1, Offset: 6})); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = e.run(t, "failover", "--from-plan", planFile, "--apply")
	if code != 3 || !strings.Contains(stderr, "group ledger changed since the plan was saved") || !strings.Contains(stderr, "its commits on eu-west changed: us-east.orders[0] none -> 2") ||
		!strings.Contains(stderr, "group audit changed since the plan was saved") || !strings.Contains(stderr, "its commits on us-east changed: orders[1] 4 -> 7") ||
		!strings.Contains(stderr, "group billing: committed 2\n") {
		t.Fatalf("from-plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	at := func(g string, p int32) int64 {
		offs, err := e.Admin(t, "eu-west").FetchOffsets(ctx, g)
		if err != nil {
			return -2
		}
		o, ok := offs.Lookup("us-east.orders", p)
		if !ok {
			return -2
		}
		return o.At
	}
	if at("billing", 0) != 4 || at("billing", 1) != 4 || at("ledger", 0) != 2 || at("ledger", 1) != -2 || at("audit", 0) != -2 {
		t.Fatalf("target: billing %d/%d ledger %d/%d audit %d", at("billing", 0), at("billing", 1), at("ledger", 0), at("ledger", 1), at("audit", 0))
	}
	if a := lastAudit(t, e.audit); a.Status != "partial" || !strings.Contains(strings.Join(a.Args, " "), "--from-plan") {
		t.Fatalf("audit %+v", a)
	}
	// Flags the plan fixes are refused with --from-plan.
	if code, _, stderr := e.run(t, "failover", "--from-plan", planFile, "--group", "x"); code != 2 || !strings.Contains(stderr, "--group does not go with --from-plan") {
		t.Fatalf("--group with --from-plan: exit %d %s", code, stderr)
	}
	if code, _, stderr := e.run(t, "failback", "--from-plan", planFile); code != 2 || !strings.Contains(stderr, "holds a failover plan") {
		t.Fatalf("failback --from-plan: exit %d %s", code, stderr)
	}
}

// `failover --drill` writes the evidence (JSON and Markdown), audits the
// run, deletes the shadow groups and leaves the real group alone.
func TestDrillCommand(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	dir := t.TempDir()
	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--drill", "--drill-report", dir)
	if code != 0 || !strings.Contains(stdout, "billing.mirrorctl-drill\tus-east.orders\t0\t4\t4\t-\tcommit\texact\t0\tcommitted\tpass") || !strings.Contains(stderr, "drill evidence: ") {
		t.Fatalf("drill: exit %d\n%s\n%s", code, stdout, stderr)
	}
	md, _ := filepath.Glob(filepath.Join(dir, "drill-*.md"))
	js, _ := filepath.Glob(filepath.Join(dir, "drill-*.json"))
	if len(md) != 1 || len(js) != 1 {
		t.Fatalf("evidence files: %v %v", md, js)
	}
	if b, _ := os.ReadFile(md[0]); !strings.Contains(string(b), "PASSED") || !strings.Contains(string(b), "the real groups were not touched") {
		t.Fatalf("markdown:\n%s", b)
	}
	if a := lastAudit(t, e.audit); a.Status != "ok" || a.Command != "failover drill" {
		t.Fatalf("audit %+v", a)
	}
	// Without --drill-report the evidence goes to the state directory, not
	// the current one, and the note names where.
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	code, _, stderr = e.run(t, "failover", "--group", "billing", "--drill")
	want := filepath.Join(state, "mirrorctl", "evidence")
	if md, _ := filepath.Glob(filepath.Join(want, "drill-*.md")); code != 0 || len(md) != 1 || !strings.Contains(stderr, "drill evidence: "+want) {
		t.Fatalf("drill without --drill-report: exit %d, pages %v\n%s", code, md, stderr)
	}
	listed, err := e.Admin(t, "eu-west").ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["billing"]; ok {
		t.Fatal("the drill touched the real group on the target")
	}
	if _, ok := listed["billing.mirrorctl-drill"]; ok {
		t.Fatal("the shadow group was not deleted")
	}
}

func TestFenceFlags(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"failover", "--group", "g", "--fence-principal", "User:app"}, "it goes with failover --apply"},
		{[]string{"failback", "--group", "g", "--fence-principal", "User:app", "--apply"}, "it goes with failover --apply"},
		{[]string{"failover", "--group", "g", "--unfence"}, "--unfence needs the --fence-principal"},
	} {
		if code, _, stderr := e.run(t, tt.args...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d %s", tt.args, code, stderr)
		}
	}
}
