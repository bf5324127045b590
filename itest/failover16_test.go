//go:build kafka

package itest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// sumEnds is the sum of topic's end offsets on adm's cluster.
func sumEnds(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatalf("end offsets of %s: %v", topic, err)
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// commitsOf returns group's commits on adm's cluster as "topic[p]=offset"
// strings, sorted by kadm, or nil when the group does not exist.
func commitsOf(ctx context.Context, t *testing.T, adm *kadm.Client, group string) []string {
	t.Helper()
	offs, err := adm.FetchOffsets(ctx, group)
	if errors.Is(err, kerr.GroupIDNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	var out []string
	for _, o := range offs.Sorted() {
		if o.Err != nil {
			t.Fatalf("fetch offsets of %s: %s[%d]: %v", group, o.Topic, o.Partition, o.Err)
		}
		out = append(out, fmt.Sprintf("%s[%d]=%d", o.Topic, o.Partition, o.At))
	}
	return out
}

// A planned failover with a write fence on real brokers: while an
// application (User:replicator, over SASL_SSL, StandardAuthorizer) produces
// to orders on us-east and `mirrorctl replicate` runs, `failover apply
// --type planned --fence-principal User:replicator` denies it WRITE, proves
// the end offsets quiet and mirrored, and commits the group's exact
// positions (20 and 20) on eu-west; the producer is refused with
// TOPIC_AUTHORIZATION_FAILED; every record it had acknowledged is in the
// source log and reaches eu-west; the evidence says RPO 0, proven by the
// fence, with the quiet end offsets equal to the source's, both partitions
// verified and its audit operations in the log; `fence status` lists the
// binding, and after `fence remove` the application writes again.
func TestPlannedFailoverWithFenceOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "orders-fence-"+u, "fence-"+u
	remote := "us-east." + topic
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	eastSASL := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST_SASL")
	appUser, appPass := mustEnv(t, "MIRRORCTL_KAFKA_APP_USER"), mustEnv(t, "MIRRORCTL_KAFKA_APP_PASSWORD")
	principal := "User:" + appUser
	eadm := kadm.NewClient(newClient(t, east))
	wadm := kadm.NewClient(newClient(t, west))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// The application may write and describe its topic (the authorizer
	// denies everything not allowed).
	allow := kadm.NewACLs().Topics(topic).ResourcePatternType(kadm.ACLPatternLiteral).Allow(principal).AllowHosts("*").
		Operations(kadm.OpWrite, kadm.OpDescribe)
	if res, err := eadm.CreateACLs(ctx, allow); err != nil || res[0].Err != nil {
		t.Fatalf("grant %s WRITE on %s: %v %v", principal, topic, err, res)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		del := kadm.NewACLs().Topics(topic).ResourcePatternType(kadm.ACLPatternLiteral).Allow(principal).AllowHosts("*").
			Deny(principal).DenyHosts("*").Operations(kadm.OpWrite, kadm.OpDescribe)
		_, _ = eadm.DeleteACLs(cctx, del)
	})
	// The group read the first 20 records of each partition and stopped.
	prod := newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceAll(ctx, t, prod, shapes(topic, 2, 0, 20))
	if _, err := eadm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 19}, kgo.Record{Topic: topic, Partition: 1, Offset: 19})); err != nil {
		t.Fatal(err)
	}

	// The application producer: acknowledged records are counted.
	app := newClient(t, eastSASL, append(saslOpts(t, appUser, appPass), kgo.DefaultProduceTopic(topic),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(2), kgo.RetryTimeout(10*time.Second))...)
	acked := atomic.Int64{}
	stopped := make(chan error, 1)
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go func() {
		for i := 0; ; i++ {
			err := app.ProduceSync(pctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("app-%06d", i))}).FirstErr()
			if err != nil {
				stopped <- err
				return
			}
			acked.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	pollUntil(ctx, t, time.Minute, "the application to write", func(context.Context) (bool, string) {
		return acked.Load() >= 50, fmt.Sprintf("%d acknowledged", acked.Load())
	})

	// The mirror runs continuously meanwhile.
	cfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\nemit.checkpoints.interval.seconds = 1\noffset.flush.interval.ms = 500\n")
	rctx, rcancel := context.WithCancel(ctx)
	repDone := make(chan int, 1)
	var repErr bytes.Buffer
	go func() {
		ios, _, _, errOut := iostreams.Test()
		code := cli.Run(rctx, ios, []string{"-c", cfg, "replicate"}, nil)
		repErr.Write(errOut.Bytes())
		repDone <- code
	}()
	defer func() {
		rcancel()
		select {
		case <-repDone:
		case <-time.After(30 * time.Second):
			t.Error("replicate did not stop within 30s")
		}
	}()

	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	code, stdout, stderr := mirrorctl(t, "-c", cfg, "--audit-log", auditLog, "failover", "apply", "--type", "planned", "--group", group,
		"--fence-principal", principal, "--settle", "2s", "--drain", "2m", "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	if code != 0 {
		t.Fatalf("failover apply --type planned --fence-principal: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var perr error
	select {
	case perr = <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the fenced producer was still writing 30s after the failover")
	}
	if !errors.Is(perr, kerr.TopicAuthorizationFailed) {
		t.Fatalf("the fenced producer stopped with %v, want TOPIC_AUTHORIZATION_FAILED", perr)
	}
	n := acked.Load()
	if got := sumEnds(ctx, t, eadm, topic); got != 40+n {
		t.Fatalf("source holds %d records, want the 40 seeded plus the %d acknowledged before the fence", got, n)
	}
	pollUntil(ctx, t, 2*time.Minute, "every acknowledged record on eu-west", func(ctx context.Context) (bool, string) {
		got := sumEnds(ctx, t, wadm, remote)
		return got == 40+n, fmt.Sprintf("%d of %d", got, 40+n)
	})
	recs, err := readAll(ctx, west, remote)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		seen[string(r.Value)] = true
	}
	for i := int64(0); i < n; i++ {
		if v := fmt.Sprintf("app-%06d", i); !seen[v] {
			t.Fatalf("acknowledged record %s is not on eu-west", v)
		}
	}
	if got := commitsOf(ctx, t, wadm, group); fmt.Sprint(got) != fmt.Sprintf("[%s[0]=20 %[1]s[1]=20]", remote) {
		t.Fatalf("group %s on eu-west: %v, want 20 and 20", group, got)
	}
	ev := readEvidence(t, stdout)
	ends := ev.Quiescence.Ends[topic]
	if !ev.Passed || ev.Type != "planned" || !ev.RPO.Proven || ev.RPO.Records != 0 || ev.Quiescence.Method != "fence" ||
		ends["0"]+ends["1"] != 40+n || ev.Verified != 2 || ev.Failed != 0 || fmt.Sprint(ev.after()) != "[20 20]" || len(ev.AuditOps) != 2 {
		t.Fatalf("evidence: passed %v type %s RPO %+v quiescence %+v ends %v (want %d) verified %d failed %d after %v ops %v",
			ev.Passed, ev.Type, ev.RPO, ev.Quiescence, ends, 40+n, ev.Verified, ev.Failed, ev.after(), ev.AuditOps)
	}
	t.Logf("planned failover with a fence: RTO %d ms; %s", ev.RTOMs, ev.RPO.How)
	entries, err := audit.Read(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{}
	for _, e := range entries {
		if e.Kind == audit.KindEnd && e.Status == audit.StatusOK {
			ops[e.Op] = e.Command
		}
	}
	if ops[ev.AuditOps[0]] != "fence add" || ops[ev.AuditOps[1]] != "failover apply" {
		t.Fatalf("the evidence's audit operations %v are not ok 'fence add' and 'failover apply' ends in the log: %v", ev.AuditOps, ops)
	}

	code, stdout, _ = mirrorctl(t, "-c", cfg, "fence", "status", "--group", group)
	if code != 0 || !strings.Contains(stdout, principal+"\t"+topic+"\tLITERAL\t*") {
		t.Fatalf("fence status: exit %d %q", code, stdout)
	}
	code, _, stderr = mirrorctl(t, "-c", cfg, "--audit-log", auditLog, "fence", "remove", "--principal", principal, "--group", group)
	if code != 0 {
		t.Fatalf("fence remove: exit %d %s", code, stderr)
	}
	app2 := newClient(t, eastSASL, append(saslOpts(t, appUser, appPass), kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())...)
	if err := app2.ProduceSync(ctx, &kgo.Record{Value: []byte("after-fence-remove")}).FirstErr(); err != nil {
		t.Fatalf("after fence remove the application still cannot write: %v", err)
	}
}

// Failback in checkpoint mode with eu-west stopped: with
// mirrorctl.reverse.checkpoints.enabled the mirror checkpoints the group's
// position on eu-west back to us-east; with eu-west's broker stopped,
// `failback --mode checkpoint --apply` commits those positions on us-east,
// and a consumer of the group on us-east resumes exactly there.
func TestFailbackCheckpointTargetStoppedOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "orders-fb-"+u, "failback-"+u
	remote := "us-east." + topic
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	eadm := kadm.NewClient(newClient(t, east))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), shapes(topic, 2, 0, 100))
	cfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\nus-east->eu-west.mirrorctl.reverse.checkpoints.enabled = true\n")
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}
	// After the failover the group consumed on eu-west: partition 0 to its
	// end, partition 1 to 100 as well (both exact at the offset syncs the
	// end of a copy writes).
	wadm := kadm.NewClient(newClient(t, west))
	if _, err := wadm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: remote, Partition: 0, Offset: 99}, kgo.Record{Topic: remote, Partition: 1, Offset: 99})); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once (reverse checkpoints): exit %d: %s", code, stderr)
	}
	// The reverse checkpoints on us-east, read as MM2's format.
	recs, err := readAll(ctx, east, "eu-west.checkpoints.internal")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	for _, r := range recs {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			t.Fatalf("reverse checkpoint at %d: %v", r.Offset, err)
		}
		if ck.Group == group && ck.Topic == topic {
			want[ck.Partition] = ck.DownstreamOffset
		}
	}
	if len(want) != 2 || want[0] != 100 || want[1] != 100 {
		t.Fatalf("reverse checkpoints of %s on us-east: %v, want orders[0]=100 and [1]=100", group, want)
	}

	// Stop eu-west's broker; it is started again whatever happens.
	runScript(ctx, t, "stop", euWest)
	restarted := false
	restart := func() {
		if restarted {
			return
		}
		restarted = true
		sctx, scancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer scancel()
		if out, err := tryScript(sctx, "start", euWest); err != nil {
			t.Errorf("restarting eu-west: %v\n%s", err, out)
		}
	}
	t.Cleanup(restart)

	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	began := time.Now()
	code, stdout, stderr := mirrorctl(t, "-c", cfg, "--audit-log", auditLog, "failback", "--group", group, "--mode", "checkpoint", "--apply", "--yes", "-o", "json")
	t.Logf("failback --mode checkpoint with eu-west stopped took %v", time.Since(began).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("failback --mode checkpoint: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		Groups []struct {
			Partitions []struct {
				Partition int32  `json:"partition"`
				Mode      string `json:"mode"`
				Outcome   string `json:"outcome"`
				Source    *int64 `json:"source_offset"`
			} `json:"partitions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || len(doc.Groups) != 1 || len(doc.Groups[0].Partitions) != 2 {
		t.Fatalf("JSON: %v\n%s", err, stdout)
	}
	for _, p := range doc.Groups[0].Partitions {
		if p.Mode != "checkpoint" || p.Outcome != "committed" || p.Source == nil || *p.Source != want[p.Partition] {
			t.Fatalf("row %+v, want committed at %d\n%s", p, want[p.Partition], stdout)
		}
	}
	if got := commitsOf(ctx, t, eadm, group); fmt.Sprint(got) != fmt.Sprintf("[%s[0]=100 %s[1]=100]", topic, topic) {
		t.Fatalf("group on us-east: %v", got)
	}
	// A group with no reverse checkpoint: refused, exit 3, nothing committed.
	code, _, stderr = mirrorctl(t, "-c", cfg, "--audit-log", auditLog, "failback", "--group", "none-"+u, "--mode", "checkpoint", "--apply", "--yes")
	if code != 3 || !strings.Contains(stderr, "no reverse checkpoint for group none-"+u) {
		t.Fatalf("no reverse checkpoint: exit %d %s", code, stderr)
	}
	restart()

	// The group resumes on us-east where the reverse checkpoints say:
	// nothing before 100 is read again (both partitions are at their end).
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), shapes(topic, 2, 100, 103))
	cons := newClient(t, east, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.DisableAutoCommit())
	var got []string
	pollUntil(ctx, t, time.Minute, "the records after the failback position", func(ctx context.Context) (bool, string) {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, fmt.Sprintf("%d@%d", r.Partition, r.Offset)) })
		return len(got) >= 6, fmt.Sprint(got)
	})
	for _, g := range got {
		var p int32
		var o int64
		if _, err := fmt.Sscanf(g, "%d@%d", &p, &o); err != nil || o < 100 {
			t.Fatalf("after failback the group read %s (before the reverse checkpoint's 100): %v", g, got)
		}
	}
}

// A Kafka 4 consumer group joined by Kafka's own Java client with
// group.protocol=consumer (KIP-848; the console consumer of the harness's
// kafka-tools) is refused by `failover` at plan and at --apply, with the
// member named, and `replicate` with sync.group.offsets.enabled leaves it
// alone.
func TestJavaConsumerProtocolGroupOnRealKafka(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	u := uniq(t)
	topic, group := "orders-848j-"+u, "kip848j-"+u
	remote := "us-east." + topic
	east := mustEnv(t, "MIRRORCTL_KAFKA_US_EAST")
	west := mustEnv(t, "MIRRORCTL_KAFKA_EU_WEST")
	eadm := kadm.NewClient(newClient(t, east))
	if _, err := eadm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceAll(ctx, t, newClient(t, east, kgo.RecordPartitioner(kgo.ManualPartitioner())), shapes(topic, 2, 0, 50))
	if _, err := eadm.CommitOffsets(ctx, group, kadm.OffsetsFromRecords(kgo.Record{Topic: topic, Partition: 0, Offset: 24}, kgo.Record{Topic: topic, Partition: 1, Offset: 24})); err != nil {
		t.Fatal(err)
	}
	cfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\n")
	if code, _, stderr := mirrorctl(t, "-c", cfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once: exit %d: %s", code, stderr)
	}

	// The Java consumer, a member of the group on eu-west until killed.
	script := mustEnv(t, "MIRRORCTL_KAFKA_SCRIPT")
	jctx, jcancel := context.WithCancel(ctx)
	java := exec.CommandContext(jctx, script, "tool", "console-consumer", "--bootstrap-server", west, "--topic", remote,
		"--group", group, "--consumer-property", "group.protocol=consumer", "--consumer-property", "client.id=java-848",
		"--consumer-property", "enable.auto.commit=false", "--timeout-ms", "180000")
	java.WaitDelay = 5 * time.Second
	var jout bytes.Buffer
	java.Stdout, java.Stderr = &jout, &jout
	if err := java.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		jcancel()
		_ = java.Wait()
		if t.Failed() {
			t.Logf("console consumer output:\n%s", jout.String())
		}
	}()
	wadm := kadm.NewClient(newClient(t, west))
	pollUntil(ctx, t, 2*time.Minute, "the Java consumer-protocol member to join", func(ctx context.Context) (bool, string) {
		d, err := wadm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			return false, err.Error()
		}
		g := d[group]
		return g.Err == nil && len(g.Members) == 1, fmt.Sprintf("state %q, %d members, err %v", g.State, len(g.Members), g.Err)
	})

	auditLog := filepath.Join(t.TempDir(), "audit.jsonl")
	for _, apply := range []bool{false, true} {
		args := []string{"-c", cfg, "--audit-log", auditLog, "failover", "--group", group, "-o", "json"}
		if apply {
			args = append(args, "--apply", "--yes")
		}
		code, stdout, stderr := mirrorctl(t, args...)
		var doc struct {
			Groups []struct {
				GroupType       string `json:"group_type"`
				BlockingMembers []struct {
					ClientID string `json:"client_id"`
					Protocol string `json:"protocol"`
				} `json:"blocking_members"`
				Partitions []struct {
					Action string `json:"action"`
				} `json:"partitions"`
			} `json:"groups"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("apply=%v: %v\n%s", apply, err, stdout)
		}
		if code != 3 || len(doc.Groups) != 1 || doc.Groups[0].GroupType != "consumer" || len(doc.Groups[0].BlockingMembers) != 1 ||
			doc.Groups[0].BlockingMembers[0].ClientID != "java-848" || doc.Groups[0].BlockingMembers[0].Protocol != "consumer" {
			t.Fatalf("apply=%v: exit %d\n%s\n%s", apply, code, stdout, stderr)
		}
		for _, p := range doc.Groups[0].Partitions {
			if p.Action != "skip-active" {
				t.Fatalf("apply=%v: action %s, want skip-active\n%s", apply, p.Action, stdout)
			}
		}
	}
	syncCfg := plainConfig(t, "topics = "+topic+"\nemit.heartbeats.enabled = false\nsync.group.offsets.enabled = true\n")
	if code, _, stderr := mirrorctl(t, "-c", syncCfg, "replicate", "--once"); code != 0 {
		t.Fatalf("replicate --once with sync.group.offsets: exit %d: %s", code, stderr)
	}
	for _, c := range commitsOf(ctx, t, wadm, group) {
		if !strings.HasSuffix(c, "=-1") {
			t.Errorf("an active Java consumer-protocol group got a commit on eu-west: %s", c)
		}
	}
}
