//go:build kafka

package itest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// evidence is the part of a failover verb's evidence (its JSON file) the
// proofs read.
type evidence struct {
	Type   string `json:"type"`
	Drill  bool   `json:"drill"`
	Passed bool   `json:"passed"`
	RTOMs  int64  `json:"rto_ms"`
	RPO    struct {
		Records int64  `json:"records"`
		Proven  bool   `json:"proven"`
		How     string `json:"how"`
	} `json:"rpo"`
	Quiescence *struct {
		Method string                      `json:"method"`
		Ends   map[string]map[string]int64 `json:"end_offsets"`
	} `json:"quiescence"`
	Bounds []struct {
		Partition      int32 `json:"partition"`
		Checkpoint     int64 `json:"checkpoint"`
		Committed      int64 `json:"committed"`
		TargetEnd      int64 `json:"target_end"`
		Copied         int64 `json:"copied"`
		SourceEnd      int64 `json:"source_end"`
		RereadMax      int64 `json:"reread_max"`
		NotMirroredMin int64 `json:"not_mirrored_min"`
	} `json:"bounds"`
	Duplicates int64 `json:"duplicates"`
	Verified   int   `json:"verified"`
	Failed     int   `json:"failed"`
	Groups     []struct {
		Group      string `json:"group"`
		Cluster    string `json:"cluster"`
		Partitions []struct {
			Partition int32  `json:"partition"`
			Before    *int64 `json:"before"`
			After     *int64 `json:"after"`
			Outcome   string `json:"outcome"`
		} `json:"partitions"`
	} `json:"groups"`
	AuditOps []string `json:"audit_operations"`
}

// after lists every partition's committed offset (-1: none), in order.
func (ev *evidence) after() []int64 {
	var out []int64
	for _, g := range ev.Groups {
		for _, p := range g.Partitions {
			if p.After == nil {
				out = append(out, -1)
			} else {
				out = append(out, *p.After)
			}
		}
	}
	return out
}

// readEvidence reads the evidence file that a verb's -o json output names,
// and checks that the output carries the same document.
func readEvidence(t *testing.T, stdout string) *evidence {
	t.Helper()
	var doc struct {
		Evidence      json.RawMessage `json:"evidence"`
		EvidenceFiles []string        `json:"evidence_files"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.EvidenceFiles) != 2 {
		t.Fatalf("no evidence files in the output (%v):\n%s", err, stdout)
	}
	raw, err := os.ReadFile(doc.EvidenceFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	var ev, inline evidence
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatalf("evidence %s: %v", doc.EvidenceFiles[0], err)
	}
	a, _ := json.Marshal(ev)
	err = json.Unmarshal(doc.Evidence, &inline)
	if b, _ := json.Marshal(inline); err != nil || string(a) != string(b) {
		t.Fatalf("the output's evidence differs from %s (%v)", doc.EvidenceFiles[0], err)
	}
	md, err := os.ReadFile(doc.EvidenceFiles[1])
	if err != nil || !strings.Contains(string(md), "| group | cluster | topic |") {
		t.Fatalf("markdown evidence %s: %v\n%s", doc.EvidenceFiles[1], err, md)
	}
	t.Logf("evidence (%s):\n%s", doc.EvidenceFiles[1], md)
	return &ev
}

// seedFailover creates a 2-partition topic on us-east with 100 records per
// partition, commits group at the given positions there, and mirrors it
// once (checkpoints, offset syncs and progress on eu-west); it returns the
// topic, its remote and the config.
func seedFailover(ctx context.Context, t *testing.T, prefix, group string, at [2]int64, extra string) (string, string, string) {
	t.Helper()
	topic := prefix + "-" + uniq(t)
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	eadm := kadm.NewClient(newClient(t, east))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), shapes(topic, 2, 0, 100))
	offs := kadm.Offsets{}
	offs.AddOffset(topic, 0, at[0], -1)
	offs.AddOffset(topic, 1, at[1], -1)
	if _, err := eadm.CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig(t, "topics = "+topic+"\ngroups = "+group+"\nemit.heartbeats.enabled = false\n"+extra)
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	return topic, "us-east." + topic, cfg
}

// An unplanned failover on real brokers: refused at once while us-east
// answers (exit 1, naming --type planned, nothing committed); with us-east's
// broker stopped (scripts/kafka.sh stop us-east), `failover apply --type
// unplanned` commits each partition at its checkpoint's downstream offset,
// read from eu-west's checkpoints topic (100 for the group at the end of
// partition 0), never waiting on the source; the evidence bounds every
// partition: committed at the checkpoint, the remote partition ends at 100
// (read again at most 100 - committed), the mirror copied 100 of a source
// end it saw at 100 (not mirrored at least 0), its RPO a bound.
func TestUnplannedFailoverSourceStoppedOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	group := "unplanned-" + uniq(t)
	_, remote, cfg := seedFailover(ctx, t, "orders-unplanned", group, [2]int64{100, 40}, "")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	wadm := kadm.NewClient(newClient(t, west))
	want := map[int32]int64{}
	recs, err := readAll(ctx, west, "us-east.checkpoints.internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if ck, err := mm2.DecodeCheckpoint(r.Key, r.Value); err == nil && ck.Group == group {
			want[ck.Partition] = ck.DownstreamOffset
		}
	}
	if len(want) != 2 || want[0] != 100 {
		t.Fatalf("checkpoints of %s on eu-west: %v, want both partitions, partition 0 at 100", group, want)
	}

	began := time.Now()
	code, _, stderr := mirrorctl(t, "-c", cfg, "failover", "apply", "--type", "unplanned", "--group", group, "--yes")
	if code != 1 || !strings.Contains(stderr, "the source cluster answers (us-east)") || !strings.Contains(stderr, "--type planned") {
		t.Fatalf("unplanned with us-east up: exit %d %s", code, stderr)
	}
	t.Logf("refused with us-east up in %v", time.Since(began).Round(time.Millisecond))
	if got := commitsOf(ctx, t, wadm, group); got != nil {
		t.Fatalf("a refused unplanned failover committed %v", got)
	}

	runScript(ctx, t, "stop", usEast)
	restarted := false
	restart := func() {
		if restarted {
			return
		}
		restarted = true
		sctx, scancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer scancel()
		if out, err := tryScript(sctx, "start", usEast); err != nil {
			t.Errorf("restarting us-east: %v\n%s", err, out)
		}
	}
	t.Cleanup(restart)

	began = time.Now()
	code, stdout, stderr := mirrorctl(t, "-c", cfg, "failover", "apply", "--type", "unplanned", "--group", group, "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	took := time.Since(began)
	if code != 0 {
		t.Fatalf("unplanned with us-east stopped: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("unplanned failover with us-east stopped took %v", took.Round(time.Millisecond))
	wantCommits := fmt.Sprintf("[%[1]s[0]=%[2]d %[1]s[1]=%[3]d]", remote, want[0], want[1])
	if got := commitsOf(ctx, t, wadm, group); fmt.Sprint(got) != wantCommits {
		t.Fatalf("group on eu-west: %v, want %s", got, wantCommits)
	}
	ev := readEvidence(t, stdout)
	if !ev.Passed || ev.Type != "unplanned" || ev.RPO.Proven || ev.RPO.Records != 0 || !strings.HasPrefix(ev.RPO.How, "a bound") ||
		fmt.Sprint(ev.after()) != fmt.Sprintf("[%d %d]", want[0], want[1]) || len(ev.Bounds) != 2 {
		t.Fatalf("evidence: passed %v type %s RPO %+v after %v bounds %+v", ev.Passed, ev.Type, ev.RPO, ev.after(), ev.Bounds)
	}
	for _, b := range ev.Bounds {
		checkpoint := map[int32]int64{0: 100, 1: 40}[b.Partition]
		if b.Checkpoint != checkpoint || b.Committed != want[b.Partition] || b.TargetEnd != 100 || b.RereadMax != 100-want[b.Partition] ||
			b.Copied != 100 || b.SourceEnd != 100 || b.NotMirroredMin != 0 {
			t.Fatalf("bound of partition %d: %+v; want checkpoint %d, committed %d, target end 100, reread at most %d, copied 100 of 100",
				b.Partition, b, checkpoint, want[b.Partition], 100-want[b.Partition])
		}
	}
	restart()
}

// A restore (failback) on real brokers: after a planned failover (the
// producers stated stopped) the group consumed on eu-west to 70 and 100;
// `failover apply --type restore` commits 70 and 100 back on us-east,
// verified record by record, with a restore evidence (RPO 0, proven: the
// records not copied are on us-east; no duplicates); eu-west's group is as
// it was.
func TestRestoreOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	group := "restore-" + uniq(t)
	topic, remote, cfg := seedFailover(ctx, t, "orders-restore", group, [2]int64{30, 50}, "")
	eadm := kadm.NewClient(newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")))
	wadm := kadm.NewClient(newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")))
	code, stdout, stderr := mirrorctl(t, "-c", cfg, "failover", "apply", "--type", "planned", "--producers-stopped", "--settle", "1s",
		"--group", group, "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("planned failover: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if ev := readEvidence(t, stdout); !ev.Passed || !ev.RPO.Proven || ev.Quiescence.Method != "producers-stopped" || fmt.Sprint(ev.after()) != "[30 50]" {
		t.Fatalf("planned evidence: passed %v RPO %+v after %v", ev.Passed, ev.RPO, ev.after())
	}
	offs := kadm.Offsets{}
	offs.AddOffset(remote, 0, 70, -1)
	offs.AddOffset(remote, 1, 100, -1)
	if _, err := wadm.CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = mirrorctl(t, "-c", cfg, "failover", "apply", "--type", "restore", "--group", group, "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("restore: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := commitsOf(ctx, t, eadm, group); fmt.Sprint(got) != fmt.Sprintf("[%s[0]=70 %[1]s[1]=100]", topic) {
		t.Fatalf("group on us-east: %v, want 70 and 100", got)
	}
	if got := commitsOf(ctx, t, wadm, group); fmt.Sprint(got) != fmt.Sprintf("[%s[0]=70 %[1]s[1]=100]", remote) {
		t.Fatalf("group on eu-west changed: %v", got)
	}
	ev := readEvidence(t, stdout)
	if !ev.Passed || ev.Type != "restore" || !ev.RPO.Proven || ev.Duplicates != 0 || ev.Verified != 2 || fmt.Sprint(ev.after()) != "[70 100]" ||
		ev.Groups[0].Cluster != usEast || *ev.Groups[0].Partitions[0].Before != 30 || *ev.Groups[0].Partitions[1].Before != 50 {
		t.Fatalf("restore evidence: passed %v type %s RPO %+v duplicates %d verified %d after %v groups %+v",
			ev.Passed, ev.Type, ev.RPO, ev.Duplicates, ev.Verified, ev.after(), ev.Groups)
	}
}

// A drill of each type on real brokers leaves the real groups untouched:
// their offsets on both clusters are equal before and after, its shadow
// group is gone, and its evidence says drill, passed, both partitions
// verified.
func TestDrillLeavesGroupsOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	group := "drill-" + uniq(t)
	_, remote, cfg := seedFailover(ctx, t, "orders-drill", group, [2]int64{60, 100}, "")
	eadm := kadm.NewClient(newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")))
	wadm := kadm.NewClient(newClient(t, mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")))
	// The real group on eu-west too (its consumers read there once).
	offs := kadm.Offsets{}
	offs.AddOffset(remote, 0, 10, -1)
	offs.AddOffset(remote, 1, 20, -1)
	if _, err := wadm.CommitOffsets(ctx, group, offs); err != nil {
		t.Fatal(err)
	}
	beforeEast, beforeWest := commitsOf(ctx, t, eadm, group), commitsOf(ctx, t, wadm, group)
	for _, typ := range []string{"planned", "unplanned"} {
		code, stdout, stderr := mirrorctl(t, "-c", cfg, "failover", "drill", "--type", typ, "--group", group, "--evidence-dir", t.TempDir(), "-o", "json")
		if code != 0 {
			t.Fatalf("drill --type %s: exit %d\n%s\n%s", typ, code, stdout, stderr)
		}
		ev := readEvidence(t, stdout)
		if !ev.Drill || !ev.Passed || ev.Type != typ || ev.Verified != 2 || ev.Failed != 0 {
			t.Fatalf("drill --type %s evidence: drill %v passed %v type %s verified %d failed %d", typ, ev.Drill, ev.Passed, ev.Type, ev.Verified, ev.Failed)
		}
		if e, w := commitsOf(ctx, t, eadm, group), commitsOf(ctx, t, wadm, group); fmt.Sprint(e) != fmt.Sprint(beforeEast) || fmt.Sprint(w) != fmt.Sprint(beforeWest) {
			t.Fatalf("drill --type %s moved the real group: us-east %v (was %v), eu-west %v (was %v)", typ, e, beforeEast, w, beforeWest)
		}
		if got := commitsOf(ctx, t, wadm, group+".mirrorctl-drill"); got != nil {
			t.Fatalf("drill --type %s left its shadow group: %v", typ, got)
		}
	}
	if fmt.Sprint(beforeWest) != fmt.Sprintf("[%s[0]=10 %[1]s[1]=20]", remote) {
		t.Fatalf("the real group on eu-west was %v before the drills", beforeWest)
	}
}
