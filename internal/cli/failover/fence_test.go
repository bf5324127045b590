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

// The write fence through the command, on a us-east with an authorizer
// (kfake with SCRAM and ACLs): while User:app produces and `replicate`
// runs, `failover --fence-principal User:app --apply --verify` fences,
// drains and commits (exit 0, audited as "failover fence"); the producer is
// refused with TOPIC_AUTHORIZATION_FAILED, every record it had acknowledged
// is in the source log and reaches eu-west; `failover --unfence` removes
// the fence and the producer writes again.
func TestFenceCommand(t *testing.T) {
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
	east, west := e.Admin(t, "us-east"), e.Admin(t, "eu-west")

	app, err := kgo.NewClient(kgo.SeedBrokers(p.Addrs("us-east")...), kgo.SASL(scram.Auth{User: "app", Pass: "apppw"}.AsSha256Mechanism()),
		kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	var acked atomic.Int64
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
	defer func() {
		rcancel()
		select {
		case <-repDone:
		case <-time.After(30 * time.Second):
			t.Error("replicate did not stop within 30s")
		}
	}()

	code, stdout, stderr := e.run(t, "failover", "--group", "billing", "--fence-principal", "User:app", "--wait-caught-up", "30s", "--apply", "--verify", "--yes")
	if code != 0 || !strings.Contains(stderr, "the fence stays until removed: mirrorctl failover --source us-east --target eu-west --unfence --fence-principal User:app") {
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
}
