package replicate

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestRefusedRecordStopsBeforeLaterRecords: source partition [a0, big
// (1.5 MB), a1, a2, a3]; the remote topic allows 100 kB. The copy of big is
// not sent and nothing after it is: the target holds [a0], the run reports a
// RecordError at offset 1 (MESSAGE_TOO_LARGE) and a refused loss event, the
// progress stays at 1. Once the target's limit is raised, the next run
// copies big, a1, a2, a3: the target holds the source's five records in
// order, none twice (before: a1..a3 landed behind the refused record and
// were copied again after the fix, [a0,a1,a2,a3,big,a1,a2,a3]).
func TestRefusedRecordStopsBeforeLaterRecords(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("refused")
	remote := testkit.East + "." + topic
	p.CreateTopic(t, testkit.East, topic, 1, map[string]*string{"max.message.bytes": ptr("4000000")})
	p.CreateTopic(t, testkit.West, remote, 1, map[string]*string{"max.message.bytes": ptr("100000")})
	big := make([]byte, 1500000) // incompressible
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	prod := p.Client(t, testkit.East, kgo.ProducerBatchMaxBytes(4000000), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for _, v := range [][]byte{[]byte("a0"), big, []byte("a1"), []byte("a2"), []byte("a3")} {
		if err := prod.ProduceSync(testkit.Context(t), &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	f := testFlow(testkit.East, testkit.West)
	f.SyncTopicConfigs = false // keep the target's own limit
	var m *Mirror
	run := func() error {
		var err error
		if m, err = New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true}); err != nil {
			t.Fatal(err)
		}
		return m.Run(testkit.Context(t))
	}
	err := run()
	var rerr *RecordError
	if !errors.As(err, &rerr) || rerr.Offset != 1 || rerr.Partition != 0 || !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("Run = %v, want a MESSAGE_TOO_LARGE RecordError at offset 1", err)
	}
	if !strings.Contains(err.Error(), "over max.message.bytes 100000 of "+remote) {
		t.Errorf("error %q does not name the limit and the remote topic", err)
	}
	st := m.Stats()
	if len(st) != 1 || st[0].Error == "" || st[0].Acked != 1 || len(st[0].Losses) != 1 ||
		st[0].Losses[0].Kind != LossRefused || st[0].Losses[0].From != 1 || !st[0].Losses[0].Stopped {
		t.Errorf("stats %+v, want stopped at 1 with one refused loss event", st)
	}
	values := func() []string {
		var out []string
		for _, r := range p.ReadAll(t, testkit.West, remote)[0] {
			if len(r.Value) > 10 {
				out = append(out, "big")
			} else {
				out = append(out, string(r.Value))
			}
		}
		return out
	}
	if got := strings.Join(values(), ","); got != "a0" {
		t.Fatalf("target holds [%s] after the refusal, want [a0]: nothing after the refused record may be sent", got)
	}

	// The operator raises the limit; the next run resumes at the refused record.
	if _, err := p.Admin(t, testkit.West).AlterTopicConfigs(testkit.Context(t),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: ptr("4000000")}}, remote); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := run(); err != nil {
		t.Fatalf("run after the fix: %v", err)
	}
	if got := strings.Join(values(), ","); got != "a0,big,a1,a2,a3" {
		t.Fatalf("target holds [%s] after the fix, want [a0,big,a1,a2,a3] (order kept, nothing twice)", got)
	}
	t.Logf("resumed and copied in %s", time.Since(start))
}

// TestCopyRunsAcrossMarkersAndRefusal: one fetch of a partition holds 300
// transactional records, their commit marker (offset 300), 399 plain
// records, a 1.5 MB record the remote topic refuses (offset 700) and 50
// more: more than one run of copyRecords (copyRun records each), ended by
// the marker and by the refusal. The target holds the 699 records before the
// refused one, in order and once each, and nothing after it; the run stops
// at offset 700.
func TestCopyRunsAcrossMarkersAndRefusal(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("runs")
	remote := testkit.East + "." + topic
	p.CreateTopic(t, testkit.East, topic, 1, map[string]*string{"max.message.bytes": ptr("4000000")})
	p.CreateTopic(t, testkit.West, remote, 1, map[string]*string{"max.message.bytes": ptr("100000")})
	ctx := testkit.Context(t)
	txn, err := p.Clients.Client(testkit.East, "producer", kgo.TransactionalID(testkit.Name("tx")),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 0; i < 300; i++ {
		v := fmt.Sprintf("r%d", i)
		want = append(want, v)
		if err := txn.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 1500000) // incompressible
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	prod := p.Client(t, testkit.East, kgo.ProducerBatchMaxBytes(4000000), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var rest []*kgo.Record
	for i := 301; i < 751; i++ {
		v := []byte(fmt.Sprintf("r%d", i))
		if i == 700 {
			v = big
		} else if i < 700 {
			want = append(want, string(v))
		}
		rest = append(rest, &kgo.Record{Topic: topic, Value: v})
	}
	if err := prod.ProduceSync(ctx, rest...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	f := testFlow(testkit.East, testkit.West)
	f.SyncTopicConfigs = false // keep the target's own limit
	m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(ctx)
	var rerr *RecordError
	if !errors.As(err, &rerr) || rerr.Offset != 700 {
		t.Fatalf("Run = %v, want a RecordError at offset 700", err)
	}
	if st := m.Stats(); len(st) != 1 || st[0].Acked != 700 {
		t.Errorf("stats %+v, want acknowledged up to offset 700", st)
	}
	var got []string
	for _, r := range p.ReadAll(t, testkit.West, remote)[0] {
		got = append(got, string(r.Value))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("target holds %d records, want the %d before the refused one in order (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRemoteTopicSharedByTasks: the tasks of one source topic get one remote
// topic string (the producer looks every record's topic up in a map, where
// the same string compares by pointer), and each source topic its own name
// by the replication policy.
func TestRemoteTopicSharedByTasks(t *testing.T) {
	cfg := DefaultFlowConfig("us-east", "eu-west")
	remote := func(topic string) string { return cfg.Policy.FormatRemoteTopic(cfg.Source, topic) }
	s := newTaskSet()
	ts := s.add(map[string][]int32{"orders": {0}}, remote)
	ts = append(ts, s.add(map[string][]int32{strings.Clone("orders"): {1}, "payments": {0}}, remote)...)
	byKey := map[tp]string{}
	for _, t := range ts {
		byKey[t.src] = t.remote
	}
	a, b := byKey[tp{"orders", 0}], byKey[tp{"orders", 1}]
	if a != "us-east.orders" || b != a {
		t.Fatalf("remote topics %q, %q; want us-east.orders twice", a, b)
	}
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Fatal("the two tasks of orders hold two copies of the remote topic name")
	}
	if c := byKey[tp{"payments", 0}]; c != "us-east.payments" {
		t.Fatalf("remote topic of payments %q, want us-east.payments", c)
	}
}
