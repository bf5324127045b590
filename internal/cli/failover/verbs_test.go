package failover_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/audit"
)

// verbDoc is the part of `failover plan|apply|drill -o json` the tests read.
type verbDoc struct {
	Type  string `json:"type"`
	Plans []struct {
		Applied bool `json:"applied"`
		Groups  []struct {
			Group      string    `json:"group"`
			Partitions []jsonRow `json:"partitions"`
		} `json:"groups"`
	} `json:"plans"`
	RPO struct {
		Records int64  `json:"records"`
		Proven  bool   `json:"proven"`
		How     string `json:"how"`
	} `json:"rpo"`
	Bounds []struct {
		Group          string `json:"group"`
		SourceTopic    string `json:"source_topic"`
		Partition      int32  `json:"partition"`
		Checkpoint     int64  `json:"checkpoint"`
		Committed      int64  `json:"committed"`
		TargetEnd      int64  `json:"target_end"`
		Copied         int64  `json:"copied"`
		SourceEnd      int64  `json:"source_end"`
		RereadMax      int64  `json:"reread_max"`
		NotMirroredMin int64  `json:"not_mirrored_min"`
	} `json:"bounds"`
	Duplicates int64 `json:"duplicates"`
	Evidence   *struct {
		Type       string `json:"type"`
		Drill      bool   `json:"drill"`
		Passed     bool   `json:"passed"`
		Verified   int    `json:"verified"`
		Failed     int    `json:"failed"`
		RTOMs      int64  `json:"rto_ms"`
		Quiescence *struct {
			Method string                      `json:"method"`
			Ends   map[string]map[string]int64 `json:"end_offsets"`
		} `json:"quiescence"`
		Groups []struct {
			Group      string `json:"group"`
			Cluster    string `json:"cluster"`
			Partitions []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Before    *int64 `json:"before"`
				After     *int64 `json:"after"`
				Outcome   string `json:"outcome"`
				Verified  *bool  `json:"verified"`
			} `json:"partitions"`
		} `json:"groups"`
		AuditOps []string `json:"audit_operations"`
	} `json:"evidence"`
	EvidenceFiles []string `json:"evidence_files"`
}

func decodeVerb(t *testing.T, stdout string) verbDoc {
	t.Helper()
	var d verbDoc
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	return d
}

// offsetsOf returns group's committed offsets on alias's cluster for topic's
// partitions 0..n-1 (-1: none).
func offsetsOf(t *testing.T, adm *kadm.Client, group, topic string, n int32) []int64 {
	t.Helper()
	offs, err := adm.FetchOffsets(context.Background(), group)
	if err != nil && !errorsIsNotFound(err) {
		t.Fatal(err)
	}
	out := make([]int64, n)
	for p := int32(0); p < n; p++ {
		out[p] = -1
		if o, ok := offs.Lookup(topic, p); ok {
			out[p] = o.At
		}
	}
	return out
}

func errorsIsNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), kerr.GroupIDNotFound.Message)
}

func evidenceAfter(d verbDoc) []int64 {
	var out []int64
	for _, g := range d.Evidence.Groups {
		for _, p := range g.Partitions {
			if p.After == nil {
				out = append(out, -1)
				continue
			}
			out = append(out, *p.After)
		}
	}
	return out
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A planned failover with the producers stated stopped: the plan changes
// nothing and says its RPO is not proven; apply without a way to stop the
// writes is a flag error; apply --producers-stopped proves the source quiet
// and mirrored, commits the exact positions (4 and 4), verifies them and
// writes the evidence (JSON and Markdown) naming its two audit operations;
// verify passes after; and the old spelling prints its deprecation line.
func TestFailoverPlannedVerb(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	west := e.Admin(t, "eu-west")
	dir := t.TempDir()

	code, stdout, stderr := e.run(t, "failover", "plan", "--type", "planned", "--group", "billing", "-o", "json")
	d := decodeVerb(t, stdout)
	if code != 0 || d.Type != "planned" || d.RPO.Proven || d.RPO.Records != 0 || !strings.HasPrefix(d.RPO.How, "not proven") || d.Evidence != nil ||
		len(d.Plans) != 1 || len(d.Plans[0].Groups) != 1 || len(d.Plans[0].Groups[0].Partitions) != 2 {
		t.Fatalf("plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, r := range d.Plans[0].Groups[0].Partitions {
		if r.Action != "commit" || r.Mode != "exact" || r.Target == nil || *r.Target != 4 {
			t.Fatalf("plan row %+v", r)
		}
	}
	if _, err := os.Stat(e.audit); err == nil {
		t.Fatal("a plan wrote to the audit log")
	}

	code, _, stderr = e.run(t, "failover", "apply", "--type", "planned", "--group", "billing", "--yes")
	if code != 2 || !strings.Contains(stderr, "--producers-stopped") || !strings.Contains(stderr, "--type unplanned") {
		t.Fatalf("apply with no fence and no statement: exit %d %s", code, stderr)
	}
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{-1, -1}) {
		t.Fatalf("a refused apply committed %v", got)
	}

	code, stdout, stderr = e.run(t, "failover", "apply", "--type", "planned", "--group", "billing", "--producers-stopped",
		"--settle", "300ms", "--evidence-dir", dir, "--yes", "-o", "json")
	d = decodeVerb(t, stdout)
	if code != 0 || d.Evidence == nil {
		t.Fatalf("apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ev := d.Evidence
	if !d.RPO.Proven || d.RPO.Records != 0 || !strings.Contains(d.RPO.How, "--producers-stopped") || !ev.Passed || ev.Type != "planned" ||
		ev.Verified != 2 || ev.Failed != 0 || ev.Quiescence == nil || ev.Quiescence.Method != "producers-stopped" ||
		ev.Quiescence.Ends["orders"]["0"] != 10 || ev.Quiescence.Ends["orders"]["1"] != 10 || len(ev.AuditOps) != 2 {
		t.Fatalf("evidence:\n%s", stdout)
	}
	if got := evidenceAfter(d); !equal(got, []int64{4, 4}) {
		t.Fatalf("evidence after = %v, want [4 4]", got)
	}
	for _, p := range ev.Groups[0].Partitions {
		if p.Before != nil || p.Outcome != "committed" || p.Verified == nil || !*p.Verified {
			t.Fatalf("evidence partition %+v", p)
		}
	}
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{4, 4}) {
		t.Fatalf("billing on eu-west at %v, want [4 4]", got)
	}
	if len(d.EvidenceFiles) != 2 || !strings.HasPrefix(d.EvidenceFiles[0], dir) {
		t.Fatalf("evidence files %v", d.EvidenceFiles)
	}
	md, err := os.ReadFile(d.EvidenceFiles[1])
	if err != nil || !strings.Contains(string(md), "# planned failover us-east -> eu-west: PASSED") ||
		!strings.Contains(string(md), "| billing | eu-west | us-east.orders | 0 | exact | none | 4 | committed | pass |") {
		t.Fatalf("markdown evidence (%v):\n%s", err, md)
	}
	if raw, _ := os.ReadFile(d.EvidenceFiles[0]); strings.Contains(string(raw), secret) {
		t.Fatal("the evidence holds the secret")
	}
	entries, err := audit.Read(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 || entries[0].Command != "failover quiesce" || entries[2].Command != "failover apply" || entries[3].Status != audit.StatusOK ||
		entries[0].Op != ev.AuditOps[0] || entries[2].Op != ev.AuditOps[1] {
		t.Fatalf("audit entries %+v, evidence names %v", entries, ev.AuditOps)
	}

	if code, stdout, stderr = e.run(t, "failover", "verify", "--group", "billing"); code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// After the apply, verify checks the commits; a plan's recovery point
	// ("the plan only reads") would read as if nothing had been applied.
	if strings.Contains(stderr, "RPO") {
		t.Errorf("verify says an RPO:\n%s", stderr)
	}
	code, _, stderr = e.run(t, "failover", "--group", "billing")
	if code != 0 || !strings.Contains(stderr, "`mirrorctl failover` with these flags is deprecated and kept for scripts; use mirrorctl failover plan --type planned") {
		t.Fatalf("the old spelling: exit %d %s", code, stderr)
	}
}

// An unplanned failover: refused while the source answers (exit 1, naming
// --type planned, nothing committed); with us-east stopped it commits the
// checkpoints from what eu-west holds (source offset 4 translates to 1: the
// newest offset sync is at 0) and bounds every partition (target end 10:
// read again at most 9; copied 10 of a source end seen 10: not mirrored at
// least 0), its RPO a bound, not proven.
func TestFailoverUnplannedVerb(t *testing.T) {
	e := newEnvWith(t, "emit.checkpoints.interval.seconds = 1\n")
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	west := e.Admin(t, "eu-west")

	code, _, stderr := e.run(t, "failover", "apply", "--type", "unplanned", "--group", "billing", "--yes")
	if code != 1 || !strings.Contains(stderr, "the source cluster answers (us-east)") || !strings.Contains(stderr, "--type planned") {
		t.Fatalf("unplanned with the source up: exit %d %s", code, stderr)
	}
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{-1, -1}) {
		t.Fatalf("a refused unplanned failover committed %v", got)
	}

	e.East.Close()
	code, stdout, stderr := e.run(t, "failover", "apply", "--type", "unplanned", "--group", "billing", "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	d := decodeVerb(t, stdout)
	if code != 0 || d.Evidence == nil || !d.Evidence.Passed || d.RPO.Proven || d.RPO.Records != 0 || !strings.HasPrefix(d.RPO.How, "a bound") {
		t.Fatalf("unplanned: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if len(d.Bounds) != 2 {
		t.Fatalf("bounds %+v", d.Bounds)
	}
	for _, b := range d.Bounds {
		if b.Group != "billing" || b.SourceTopic != "orders" || b.Checkpoint != 4 || b.Committed != 1 || b.TargetEnd != 10 ||
			b.Copied != 10 || b.SourceEnd != 10 || b.RereadMax != 9 || b.NotMirroredMin != 0 {
			t.Fatalf("bound %+v", b)
		}
	}
	for _, r := range d.Plans[0].Groups[0].Partitions {
		if r.Mode != "checkpoint" || r.Outcome != "committed" {
			t.Fatalf("row %+v", r)
		}
	}
	if got := evidenceAfter(d); !equal(got, []int64{1, 1}) {
		t.Fatalf("evidence after = %v", got)
	}
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{1, 1}) {
		t.Fatalf("billing on eu-west at %v, want [1 1]", got)
	}
}

// A restore (failback) after the group moved on on eu-west: the plan and
// the apply commit its position back on us-east (8 and 8), verified, with a
// restore evidence; the old `failback --apply` names the new verb.
func TestFailoverRestoreVerb(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	east, west := e.Admin(t, "us-east"), e.Admin(t, "eu-west")
	e.Commit(t, "eu-west", "billing", map[string]map[int32]int64{"us-east.orders": {0: 8, 1: 8}})

	evDir := t.TempDir()
	code, stdout, stderr := e.run(t, "failover", "apply", "--type", "restore", "--source", "us-east", "--target", "eu-west", "--group", "billing", "--evidence-dir", evDir, "--yes", "-o", "json")
	d := decodeVerb(t, stdout)
	if code != 0 || d.Type != "restore" || d.Evidence == nil || !d.Evidence.Passed || d.Evidence.Verified != 2 || !d.RPO.Proven || d.Duplicates != 0 {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// The page names the way the groups moved, then the flow.
	pages, _ := filepath.Glob(filepath.Join(evDir, "*.md"))
	if len(pages) != 1 {
		t.Fatalf("restore evidence pages %v", pages)
	}
	if md, err := os.ReadFile(pages[0]); err != nil || !strings.Contains(string(md), "# restore (failback) eu-west -> us-east (flow us-east->eu-west): PASSED") {
		t.Fatalf("restore evidence page: %v\n%s", err, md)
	}
	if g := d.Evidence.Groups[0]; g.Cluster != "us-east" || g.Partitions[0].Topic != "orders" || *g.Partitions[0].Before != 4 || *g.Partitions[0].After != 8 {
		t.Fatalf("evidence group %+v", g)
	}
	if got := offsetsOf(t, east, "billing", "orders", 2); !equal(got, []int64{8, 8}) {
		t.Fatalf("billing on us-east at %v, want [8 8]", got)
	}
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{8, 8}) {
		t.Fatalf("billing on eu-west changed: %v", got)
	}
	code, _, stderr = e.run(t, "failback", "--group", "billing", "--apply", "--yes")
	if code != 0 || !strings.Contains(stderr, "use mirrorctl failover apply --type restore") {
		t.Fatalf("failback --apply: exit %d %s", code, stderr)
	}
}

// A drill of each type leaves the real groups as they were (absent on
// eu-west, 4 and 4 on us-east), deletes its shadows, and its evidence says
// drill, passed, two partitions verified.
func TestFailoverDrillVerb(t *testing.T) {
	e := newEnvWith(t, "emit.checkpoints.interval.seconds = 1\n")
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	east, west := e.Admin(t, "us-east"), e.Admin(t, "eu-west")
	for _, typ := range []string{"planned", "unplanned"} {
		code, stdout, stderr := e.run(t, "failover", "drill", "--type", typ, "--group", "billing", "--evidence-dir", t.TempDir(), "-o", "json")
		d := decodeVerb(t, stdout)
		if code != 0 || d.Evidence == nil || !d.Evidence.Drill || !d.Evidence.Passed || d.Evidence.Type != typ || d.Evidence.Verified != 2 {
			t.Fatalf("drill --type %s: exit %d\n%s\n%s", typ, code, stdout, stderr)
		}
		if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{-1, -1}) {
			t.Fatalf("drill --type %s moved the real group on eu-west: %v", typ, got)
		}
		if got := offsetsOf(t, east, "billing", "orders", 2); !equal(got, []int64{4, 4}) {
			t.Fatalf("drill --type %s moved the real group on us-east: %v", typ, got)
		}
		if got := offsetsOf(t, west, "billing.mirrorctl-drill", "us-east.orders", 2); !equal(got, []int64{-1, -1}) {
			t.Fatalf("drill --type %s left its shadow group: %v", typ, got)
		}
	}
}

func TestFailoverVerbFlags(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"failover", "plan", "--type", "planned"}, "name the groups with --group (repeatable) or --groups <regex>"},
		{[]string{"failover", "plan", "--type", "sideways", "--group", "g"}, `valid values are {planned|unplanned|restore}`},
		{[]string{"failover", "apply", "--type", "unplanned", "--group", "g", "--producers-stopped"}, "only a planned failover does (this is --type unplanned)"},
		{[]string{"failover", "plan", "--type", "planned", "--group", "g", "--allow-behind"}, "--allow-behind goes with --type restore"},
		{[]string{"failover", "drill", "--type", "restore", "--group", "g"}, "restore has none"},
		{[]string{"failover", "plan", "--group", "g", "--apply"}, "unknown flag: --apply"},
		{[]string{"fence", "add", "--group", "g"}, "name the producers with --principal"},
		{[]string{"fence", "remove", "--principal", "User:app"}, "name the topics with --group, --groups or --topic"},
	} {
		code, _, stderr := e.run(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// A restore with a reverse flow (eu-west->us-east enabled): billing read
// us-east.orders and eu-west's own payments on eu-west. The restore moves
// both back to us-east, orders by the failback and eu-west.payments along
// the reverse flow; while the reverse flow has not copied what billing
// consumed of payments it is refused (exit 3, nothing committed), and once
// it has, both commit exactly.
func TestFailoverRestoreVerbReverseFlow(t *testing.T) {
	e := newEnvWith(t, "eu-west->us-east.enabled = true\n")
	e.CreateTopic(t, "eu-west", "payments", 1, nil)
	var pay []*kgo.Record
	for i := 0; i < 10; i++ {
		pay = append(pay, &kgo.Record{Topic: "payments", Value: []byte(fmt.Sprint("pay-", i))})
	}
	e.Produce(t, "eu-west", pay...)
	seed(t, e, 2, 10, map[string]int64{"billing": 4})
	east := e.Admin(t, "us-east")
	more := []*kgo.Record{}
	for i := 10; i < 15; i++ {
		more = append(more, &kgo.Record{Topic: "payments", Value: []byte(fmt.Sprint("pay-", i))})
	}
	e.Produce(t, "eu-west", more...)
	e.Commit(t, "eu-west", "billing", map[string]map[int32]int64{"us-east.orders": {0: 8, 1: 8}, "payments": {0: 12}})

	code, stdout, stderr := e.run(t, "failover", "apply", "--type", "restore", "--source", "us-east", "--target", "eu-west", "--group", "billing", "--evidence-dir", t.TempDir(), "--yes")
	if code != 3 || !strings.Contains(stderr, "the reverse flow eu-west->us-east has not copied back what group billing consumed on eu-west") {
		t.Fatalf("restore with the reverse flow behind: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := offsetsOf(t, east, "billing", "orders", 2); !equal(got, []int64{4, 4}) {
		t.Fatalf("a refused restore moved billing on us-east: %v", got)
	}
	if code, _, stderr := e.run(t, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: %d %s", code, stderr)
	}
	code, stdout, stderr = e.run(t, "failover", "apply", "--type", "restore", "--source", "us-east", "--target", "eu-west", "--group", "billing", "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	d := decodeVerb(t, stdout)
	if code != 0 || d.Evidence == nil || !d.Evidence.Passed || len(d.Plans) != 2 || d.Duplicates != 0 {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := offsetsOf(t, east, "billing", "orders", 2); !equal(got, []int64{8, 8}) {
		t.Fatalf("billing orders on us-east at %v, want [8 8]", got)
	}
	if got := offsetsOf(t, east, "billing", "eu-west.payments", 1); !equal(got, []int64{12}) {
		t.Fatalf("billing eu-west.payments on us-east at %v, want [12]", got)
	}
}

// A saved plan applied later writes its evidence too: `failover plan
// --plan-out` then `failover apply --from-plan --producers-stopped` commits
// the reviewed positions (4 and 4), RPO 0 proven; a group that moved on the
// source since is refused (exit 3, nothing committed to it).
func TestFailoverApplyFromPlanVerb(t *testing.T) {
	e := newEnv(t)
	seed(t, e, 2, 10, map[string]int64{"billing": 4, "ledger": 6})
	west := e.Admin(t, "eu-west")
	saved := t.TempDir() + "/cutover.json"
	if code, stdout, stderr := e.run(t, "failover", "plan", "--type", "planned", "--group", "billing", "--group", "ledger", "--plan-out", saved); code != 0 {
		t.Fatalf("plan --plan-out: exit %d\n%s\n%s", code, stdout, stderr)
	}
	e.Commit(t, "us-east", "ledger", map[string]map[int32]int64{"orders": {0: 8, 1: 8}})
	code, stdout, stderr := e.run(t, "failover", "apply", "--from-plan", saved, "--producers-stopped", "--settle", "200ms",
		"--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	d := decodeVerb(t, stdout)
	if code != 3 || d.Evidence == nil || d.Evidence.Passed || !d.RPO.Proven || !strings.Contains(stderr, "ledger") {
		t.Fatalf("apply --from-plan: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{4, 4}) {
		t.Fatalf("billing on eu-west at %v, want [4 4]", got)
	}
	if got := offsetsOf(t, west, "ledger", "us-east.orders", 2); !equal(got, []int64{-1, -1}) {
		t.Fatalf("ledger moved since the plan, yet committed: %v", got)
	}
	code, _, stderr = e.run(t, "failover", "apply", "--from-plan", saved, "--yes")
	if code != 2 || !strings.Contains(stderr, "--producers-stopped") {
		t.Fatalf("apply --from-plan with no quiescence: exit %d %s", code, stderr)
	}
}
