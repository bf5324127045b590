package replicate

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

func eosFlow() FlowConfig {
	f := testFlow("us-east", "eu-west")
	f.ExactlyOnce = true
	f.TransactionInterval = 50 * time.Millisecond
	return f
}

// TestExactlyOnceCopiesCommittedOnce: in exactly-once mode a read_committed
// read of the target holds each committed source record once, in order,
// aborted ones never; progress is committed with them; offset syncs map
// copied records to their copies.
func TestExactlyOnceCopiesCommittedOnce(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("eos")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	want := txnSteps(t, p, "us-east", topic, "c", "a", "p", "c", "a")
	produceSeq(t, p, topic, 1, 500)
	m := runOnce(t, p, eosFlow())
	remote := "us-east." + topic
	got := values(p.ReadAllCommitted(t, "eu-west", remote)[0])
	if len(got) != len(want)+500 || fmt.Sprint(got[:len(want)]) != fmt.Sprint(want) {
		t.Fatalf("target holds %d records starting %v, want %d starting %v", len(got), got[:min(len(got), len(want))], len(want)+500, want)
	}
	for _, r := range p.ReadAll(t, "eu-west", remote)[0] {
		if !r.Attrs.IsTransactional() {
			t.Fatalf("copy at %d was not written in a transaction", r.Offset)
		}
	}
	for _, r := range p.ReadAll(t, "eu-west", ProgressTopic(eosFlow().Policy, "us-east"))[0] {
		if !r.Attrs.IsTransactional() {
			t.Fatalf("progress at %d was not written in a transaction", r.Offset)
		}
	}
	for _, s := range m.Stats() {
		if s.Error != "" {
			t.Fatalf("partition %s[%d]: %s", s.Topic, s.Partition, s.Error)
		}
	}
	st := m.Status()
	if len(st) != 1 || st[0].TransactionsCommitted == 0 {
		t.Fatalf("status %+v: want committed transactions counted", st)
	}
}

// TestExactlyOnceHonoursRemoteTopicLimits: the source topic allows 20000
// bytes (config sync gives the remote topic the same), 3000 records of 100 B
// are copied in exactly-once mode: each once, in order, read_committed
// (before: the transactional producer had no batch cap, every batch was
// refused, 0 copied and the partition stopped naming an innocent record).
// Then a 30000-byte record and 5 more: the copy of the big one is refused
// before it is sent, nothing after it goes out, the run reports a
// RecordError at its offset, and the progress stays at it, as at-least-once
// does.
func TestExactlyOnceHonoursRemoteTopicLimits(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("eos-strict")
	remote := testkit.East + "." + topic
	p.CreateTopic(t, testkit.East, topic, 1, map[string]*string{"max.message.bytes": ptr("20000")})
	var recs []*kgo.Record
	for i := 0; i < 3000; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%05d-%s", i, strings.Repeat("x", 94)))})
	}
	prod := p.Client(t, testkit.East, kgo.ProducerBatchMaxBytes(20000))
	if err := prod.ProduceSync(testkit.Context(t), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f := eosFlow()
	runOnce(t, p, f)
	check := func(n int) []string {
		t.Helper()
		got := values(p.ReadAllCommitted(t, testkit.West, remote)[0])
		if len(got) != n {
			t.Fatalf("target holds %d committed records, want %d", len(got), n)
		}
		for i, v := range got {
			if !strings.HasPrefix(v, fmt.Sprintf("%05d-", i)) {
				t.Fatalf("committed record %d is %.6q: not in order, or twice", i, v)
			}
		}
		return got
	}
	check(3000)

	bigRec := make([]byte, 30000)
	if _, err := rand.Read(bigRec); err != nil {
		t.Fatal(err)
	}
	p.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%05d-", 3000) + string(bigRec[:5000]))})
	// A record over the source's limit cannot be produced there: the
	// source allows it now, the remote topic keeps 20000 (no config sync).
	if _, err := p.Admin(t, testkit.East).AlterTopicConfigs(testkit.Context(t),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptr("4000000")}}, topic); err != nil {
		t.Fatal(err)
	}
	big := p.Client(t, testkit.East, kgo.ProducerBatchMaxBytes(4000000))
	if err := big.ProduceSync(testkit.Context(t), &kgo.Record{Topic: topic, Value: bigRec}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		p.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%05d-after", 3002+i))})
	}
	f.SyncTopicConfigs = false
	m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(testkit.Context(t))
	var rerr *RecordError
	if !errors.As(err, &rerr) || rerr.Offset != 3001 || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Run = %v, want a MESSAGE_TOO_LARGE RecordError at offset 3001", err)
	}
	check(3001)
	st := m.Stats()
	if len(st) != 1 || st[0].Error == "" || st[0].Acked != 3001 || len(st[0].Losses) != 1 || st[0].Losses[0].Kind != LossRefused {
		t.Fatalf("stats %+v, want stopped at 3001 with one refused loss event", st)
	}
	if next, _ := readProgress(testkit.Context(t), f, p.Clients); next[tp{topic, 0}] != 3001 {
		t.Fatalf("progress %v, want 3001: a restart after the fix resumes at the refused record", next)
	}
}

// TestTaskProducersPushNoMetricsByDefault: an exactly-once task's
// transactional producer pushes no client metrics (KIP-714) unless the flow
// says so; the flow's shared data producer keeps the cluster's setting.
func TestTaskProducersPushNoMetricsByDefault(t *testing.T) {
	p := newClusterPair(t)
	for _, push := range []bool{false, true} {
		f := eosFlow()
		f.TaskMetricsPush = push
		w := &worker{flowEnv: flowEnv{cfg: f, clients: p.Clients}}
		w.io.limits = &limitsCache{}
		tx, err := w.dataProducer("tx-metrics")
		if err != nil {
			t.Fatal(err)
		}
		data, err := w.dataProducer("")
		if err != nil {
			t.Fatal(err)
		}
		if got := tx.OptValue(kgo.DisableClientMetrics); got != !push {
			t.Errorf("TaskMetricsPush %v: task producer DisableClientMetrics = %v, want %v", push, got, !push)
		}
		if got := data.OptValue(kgo.DisableClientMetrics); got != false {
			t.Errorf("TaskMetricsPush %v: data producer DisableClientMetrics = %v, want false", push, got)
		}
		tx.Close()
		data.Close()
	}
}
