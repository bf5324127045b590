package failover_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/mirrorctl/mirrorctl/audit"
	"github.com/mirrorctl/mirrorctl/internal/cli"
	"github.com/mirrorctl/mirrorctl/internal/iostreams"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// fenced is a us-east with an authorizer (kfake with SCRAM and ACLs) where
// User:app produces to orders (2 partitions) until refused, billing read
// the first 10 records of each partition, and `replicate` runs.
type fenced struct {
	*env
	app     *kgo.Client
	acked   *atomic.Int64
	stopped chan error
}

func newFenced(t *testing.T) *fenced {
	t.Helper()
	allowAll := kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "*", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationWrite, Allow: true}
	p := testkit.NewPair(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", "root", "rootpw"),
		kfake.User("SCRAM-SHA-256", "app", "apppw", allowAll))
	root := kgo.SASL(scram.Auth{User: "root", Pass: "rootpw"}.AsSha256Mechanism())
	for _, role := range []string{"admin", "test"} {
		p.Clients.Extra["us-east/"+role] = []kgo.Opt{root}
	}
	e := &env{Pair: p, audit: filepath.Join(t.TempDir(), "audit.jsonl"), config: p.WriteConfig(t,
		"us-east.security.protocol = SASL_PLAINTEXT\nus-east.sasl.mechanism = SCRAM-SHA-256\n"+
			"us-east.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required username=\"root\" password=\"rootpw\";\n"+
			"emit.checkpoints.interval.seconds = 1\noffset.flush.interval.ms = 200\n")}
	ctx := testkit.Context(t)
	p.CreateTopic(t, "us-east", "orders", 2, nil)
	east := e.Admin(t, "us-east")

	app, err := kgo.NewClient(kgo.SeedBrokers(p.Addrs("us-east")...), kgo.SASL(scram.Auth{User: "app", Pass: "apppw"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	acked := new(atomic.Int64)
	stopped := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := app.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Key: []byte(fmt.Sprint(i % 5)), Value: []byte(fmt.Sprintf("app-%06d", i))}).FirstErr(); err != nil {
				stopped <- err
				return
			}
			acked.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	testkit.WaitFor(t, "the application to write", func() bool { return acked.Load() >= 50 })
	// billing read the first 10 records of each partition and stopped.
	if _, err := east.CommitOffsets(ctx, "billing", kadm.OffsetsFromRecords(kgo.Record{Topic: "orders", Partition: 0, Offset: 9}, kgo.Record{Topic: "orders", Partition: 1, Offset: 9})); err != nil {
		t.Fatal(err)
	}

	rctx, rcancel := context.WithCancel(context.Background())
	repDone := make(chan int, 1)
	go func() {
		ios, _, _, _ := iostreams.Test()
		repDone <- cli.Run(rctx, ios, []string{"-c", e.config, "replicate"}, nil)
	}()
	t.Cleanup(func() {
		rcancel()
		select {
		case <-repDone:
		case <-time.After(30 * time.Second):
			t.Error("replicate did not stop within 30s")
		}
	})
	return &fenced{env: e, app: app, acked: acked, stopped: stopped}
}

// The write fence through the command, on a us-east with an authorizer
// (kfake with SCRAM and ACLs): while User:app produces and `replicate`
// runs, the old spelling `failover --fence-principal User:app --apply --verify` fences,
// drains and commits (exit 0, audited as "failover fence"); the producer is
// refused with TOPIC_AUTHORIZATION_FAILED, every record it had acknowledged
// is in the source log and reaches eu-west; `failover --unfence` removes
// the fence and the producer writes again.
func TestFenceCommand(t *testing.T) {
	f := newFenced(t)
	e, app, acked, stopped := f.env, f.app, f.acked, f.stopped
	ctx := testkit.Context(t)
	east, west := e.Admin(t, "us-east"), e.Admin(t, "eu-west")
	p := e.Pair
	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--fence-principal", "User:app", "--wait-caught-up", "30s", "--apply", "--verify", "--yes")
	if code != 0 || !strings.Contains(stderr, "the fence stays until removed: mirrorctl fence remove --source us-east --target eu-west --principal User:app --group billing") {
		t.Fatalf("failover --fence-principal: exit %d\n%s\n%s", code, stdout, stderr)
	}
	var perr error
	select {
	case perr = <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the fenced producer was still writing 20s after the failover")
	}
	if !errors.Is(perr, kerr.TopicAuthorizationFailed) {
		t.Fatalf("the fenced producer stopped with %v, want TOPIC_AUTHORIZATION_FAILED", perr)
	}
	n := acked.Load()
	sum := func(adm *kadm.Client, topic string) int64 {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		var s int64
		ends.Each(func(o kadm.ListedOffset) { s += o.Offset })
		return s
	}
	if got := sum(east, "orders"); got != n {
		t.Fatalf("us-east holds %d records, the producer had %d acknowledged", got, n)
	}
	testkit.WaitFor(t, "every acknowledged record on eu-west", func() bool { return sum(west, "us-east.orders") == n })
	seen := map[string]bool{}
	for _, recs := range p.ReadAll(t, "eu-west", "us-east.orders") {
		for _, r := range recs {
			seen[string(r.Value)] = true
		}
	}
	for i := int64(0); i < n; i++ {
		if !seen[fmt.Sprintf("app-%06d", i)] {
			t.Fatalf("acknowledged record app-%06d is not on eu-west", i)
		}
	}
	entries, err := audit.Read(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	fenced := false
	for _, en := range entries {
		if en.Command == "failover fence" && en.Kind == audit.KindEnd && en.Status == audit.StatusOK {
			fenced = true
		}
	}
	if !fenced {
		t.Fatalf("no ok 'failover fence' end entry: %+v", entries)
	}
	offs, err := west.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 2; part++ {
		if o, _ := offs.Lookup("us-east.orders", part); o.At != 10 {
			t.Fatalf("billing us-east.orders[%d] at %d on eu-west, want 10", part, o.At)
		}
	}

	code, _, stderr = e.run(t, "failover", "--group", "billing", "--unfence", "--fence-principal", "User:app")
	if code != 0 || !strings.Contains(stderr, "write fence removed for User:app") {
		t.Fatalf("--unfence: exit %d %s", code, stderr)
	}
	if err := app.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("after --unfence: %v", err)
	}
	if a := lastAudit(t, e.audit); a.Command != "unfence" || a.Status != audit.StatusOK {
		t.Fatalf("last audit entry %+v", a)
	}
	// A second --unfence finds nothing to remove: it says so, exits 3 and
	// audits nothing.
	code, _, stderr = e.run(t, "failover", "--group", "billing", "--unfence", "--fence-principal", "User:app")
	if code != 3 || !strings.Contains(stderr, "no write fence of User:app on 1 topic of us-east: nothing removed") || strings.Contains(stderr, "fence removed") {
		t.Fatalf("second --unfence: exit %d %s", code, stderr)
	}
	if a := lastAudit(t, e.audit); a.Command != "unfence" || a.Status != audit.StatusOK {
		t.Fatalf("the second --unfence audited %+v", a)
	}
}

// The planned failover with a fence through the verbs: `failover apply
// --type planned --fence-principal User:app` fences, proves the end offsets
// quiet and mirrored, commits billing at 10 and 10 and writes evidence
// saying so (RPO 0, proven by the fence); the producer is refused, every
// record it had acknowledged reaches eu-west; `fence status` lists the
// binding, `fence remove` lets the producer write again, a second remove
// finds nothing (exit 3), and `fence add --topic` fences one topic.
func TestFenceVerbs(t *testing.T) {
	f := newFenced(t)
	e := f.env
	ctx := testkit.Context(t)
	code, stdout, stderr := e.run(t, "failover", "apply", "--type", "planned", "--group", "billing", "--fence-principal", "User:app",
		"--settle", "500ms", "--drain", "30s", "--evidence-dir", t.TempDir(), "--yes", "-o", "json")
	d := decodeVerb(t, stdout)
	if code != 0 || d.Evidence == nil || !d.Evidence.Passed || !d.RPO.Proven || d.RPO.Records != 0 || !strings.HasPrefix(d.RPO.How, "writes fenced (DENY WRITE for [User:app] on 1 topic)") ||
		d.Evidence.Quiescence == nil || d.Evidence.Quiescence.Method != "fence" || d.Evidence.Verified != 2 ||
		!strings.Contains(stderr, "the fence stays until removed: mirrorctl fence remove --source us-east --target eu-west --principal User:app --group billing") {
		t.Fatalf("failover apply --type planned --fence-principal: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := evidenceAfter(d); !equal(got, []int64{10, 10}) {
		t.Fatalf("evidence after = %v, want [10 10]", got)
	}
	var perr error
	select {
	case perr = <-f.stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the fenced producer was still writing 20s after the failover")
	}
	if !errors.Is(perr, kerr.TopicAuthorizationFailed) {
		t.Fatalf("the fenced producer stopped with %v, want TOPIC_AUTHORIZATION_FAILED", perr)
	}
	ends := d.Evidence.Quiescence.Ends["orders"]
	if n := f.acked.Load(); ends["0"]+ends["1"] != n {
		t.Fatalf("the quiet end offsets %v hold %d records, the producer had %d acknowledged", ends, ends["0"]+ends["1"], n)
	}
	west := e.Admin(t, "eu-west")
	if got := offsetsOf(t, west, "billing", "us-east.orders", 2); !equal(got, []int64{10, 10}) {
		t.Fatalf("billing on eu-west at %v, want [10 10]", got)
	}
	remoteEnds, err := west.ListEndOffsets(ctx, "us-east.orders")
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range map[int32]int64{0: ends["0"], 1: ends["1"]} {
		if o, _ := remoteEnds.Lookup("us-east.orders", p); o.Offset != end {
			t.Fatalf("us-east.orders[%d] ends at %d on eu-west, the quiet source end is %d", p, o.Offset, end)
		}
	}

	code, stdout, _ = e.run(t, "fence", "status", "--group", "billing")
	if code != 0 || !strings.Contains(stdout, "User:app\torders\tLITERAL\t*") {
		t.Fatalf("fence status: exit %d %q", code, stdout)
	}
	code, _, stderr = e.run(t, "fence", "remove", "--principal", "User:app", "--group", "billing")
	if code != 0 || !strings.Contains(stderr, "write fence removed for User:app on 1 topic of us-east (1 bindings)") {
		t.Fatalf("fence remove: exit %d %s", code, stderr)
	}
	if err := f.app.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("after fence remove: %v", err)
	}
	code, _, stderr = e.run(t, "fence", "remove", "--principal", "User:app", "--group", "billing")
	if code != 3 || !strings.Contains(stderr, "nothing removed") {
		t.Fatalf("a second fence remove: exit %d %s", code, stderr)
	}
	code, _, stderr = e.run(t, "fence", "add", "--principal", "User:app", "--topic", "orders")
	if code != 0 || !strings.Contains(stderr, "write fence in place for User:app on 1 topic of us-east") {
		t.Fatalf("fence add --topic: exit %d %s", code, stderr)
	}
	if err := f.app.ProduceSync(ctx, &kgo.Record{Value: []byte("fenced")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("after fence add: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	cmds := map[string]int{}
	entries, err := audit.Read(e.audit)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		if en.Kind == audit.KindEnd && en.Status == audit.StatusOK {
			cmds[en.Command]++
		}
	}
	if cmds["fence add"] != 2 || cmds["failover apply"] != 1 || cmds["fence remove"] != 1 {
		t.Fatalf("audited ok ends %v, want fence add 2 (the failover's, then --topic), failover apply 1, fence remove 1", cmds)
	}
}
