package replicate

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// TestTxnFilter: of a partition read uncommitted, records written outside
// a transaction pass at once; a transaction's pass at its commit marker, in
// the order written, whatever other producers wrote meanwhile; an aborted
// one's never.
func TestTxnFilter(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("txnfilter")
	p.CreateTopic(t, "eu-west", topic, 1, nil)
	ctx := testkit.Context(t)
	txn := func(name string) *kgo.Client {
		cl, err := p.Clients.Client("eu-west", "producer", kgo.TransactionalID(testkit.Name(name)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	put := func(cl *kgo.Client, v string) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	plain := p.Client(t, "eu-west", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	a := txn("tx-a")
	put(a, "a1")
	put(plain, "plain1")
	b := txn("tx-b")
	put(b, "b1")
	put(a, "a2")
	if err := b.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	put(plain, "plain2")
	if err := a.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	put(plain, "plain3")

	var (
		f   txnFilter
		got []string
	)
	for _, r := range readWithMarkers(t, p, topic) {
		if r.Attrs.IsControl() && len(got) == 1 {
			// the first marker (b's abort): everything before it read
			if !f.openBefore(r.Offset, func(r *kgo.Record) bool { return string(r.Key) == "a2" }) {
				t.Error("openBefore(a2) = false before a's commit marker")
			}
			if f.openBefore(r.Offset, func(r *kgo.Record) bool { return string(r.Key) == "plain1" }) {
				t.Error("openBefore(plain1) = true: plain1 is in no transaction")
			}
		}
		for _, v := range f.add(r, nil) {
			got = append(got, string(v.Value))
		}
	}
	if fmt.Sprint(got) != "[plain1 plain2 a1 a2 plain3]" {
		t.Fatalf("passed %v, want [plain1 plain2 a1 a2 plain3]", got)
	}
	if len(f.open) != 0 {
		t.Errorf("%d transactions still open, want none", len(f.open))
	}
}

// readWithMarkers reads partition 0 of topic on eu-west uncommitted, its
// transaction markers included.
func readWithMarkers(t *testing.T, p *clusterPair, topic string) []*kgo.Record {
	t.Helper()
	ctx := testkit.Context(t)
	ends, err := p.Admin(t, "eu-west").ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	cl := p.Client(t, "eu-west", kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.KeepControlRecords())
	var out []*kgo.Record
	for len(out) == 0 || out[len(out)-1].Offset+1 < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatal(err) })
		out = append(out, fs.Records()...)
	}
	return out
}

// TestProgressViewOlderRecordLater: a transaction's position, visible at
// its commit after a newer one written outside it, does not replace it.
func TestProgressViewOlderRecordLater(t *testing.T) {
	v := &progressView{log: discard, vals: map[tp]heldValue{}}
	rec := func(off, next int64) *kgo.Record {
		k, val := progress.Encode(progress.Key{Topic: "orders", Partition: 0}, next, time.UnixMilli(1700000000000))
		return &kgo.Record{Key: k, Value: val, Offset: off}
	}
	v.apply([]*kgo.Record{rec(7, 70)})
	v.apply([]*kgo.Record{rec(3, 30)})
	if got := v.vals[tp{"orders", 0}].Next; got != 70 {
		t.Errorf("next = %d after an older record came in later, want 70", got)
	}
	v.apply([]*kgo.Record{rec(9, 90), rec(5, 50)}) // one poll, not in offset order
	if got := v.vals[tp{"orders", 0}].Next; got != 90 {
		t.Errorf("next = %d, want 90 (the newest by offset)", got)
	}
}

// TestProgressBehindOpenTransaction: a transaction left open on the
// progress topic (an exactly-once process killed in it, for another flow's
// partition) hides neither the at-least-once progress written after it from
// the start-up read, so a restarted flow resumes rather than refusing or
// copying again, nor from the other progress readers; a catch-up for the
// open transaction's own partition waits for it to end.
func TestProgressBehindOpenTransaction(t *testing.T) {
	p := newClusterPair(t)
	f := testFlow("us-east", "eu-west")
	src := testkit.Name("orders")
	p.CreateTopic(t, "us-east", src, 2, nil)
	ptopic := ProgressTopic(f.Policy, f.Source)
	p.CreateTopic(t, "eu-west", ptopic, 1, nil)
	ctx := testkit.Context(t)

	open, err := p.Clients.Client("eu-west", "producer", kgo.TransactionalID(testkit.Name("tx-killed")), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10*time.Minute)) // open for the whole test, as a hanging one
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	other := tp{"other", 0}
	k, val := progress.Encode(progress.Key{Topic: other.topic, Partition: other.partition}, 5, time.Now())
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: ptopic, Key: k, Value: val}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Topic: src, Partition: int32(i % 2), Value: fmt.Appendf(nil, "%d", i)})
		}
		p.Produce(t, "us-east", recs...)
	}
	produce(0, 100)
	runOnce(t, p, f)
	got, err := readProgress(ctx, f, p.Clients)
	if err != nil {
		t.Fatal(err)
	}
	if got[tp{src, 0}] != 50 || got[tp{src, 1}] != 50 {
		t.Fatalf("start-up read behind an open transaction: %v, want %s-0 and -1 at 50", got, src)
	}
	if _, ok := got[other]; ok {
		t.Errorf("start-up read holds %v of a transaction still open", other)
	}
	seen := map[string]int64{}
	if err := ReadProgressTopic(ctx, p.Clients, "eu-west", ptopic, func(r *kgo.Record) {
		if k, next, err := progress.Decode(r.Key, r.Value); err == nil {
			seen[fmt.Sprintf("%s-%d", k.Topic, k.Partition)] = next
		}
	}); err != nil {
		t.Fatal(err)
	}
	if seen[src+"-0"] != 50 || seen[src+"-1"] != 50 || seen["other-0"] != 0 {
		t.Errorf("ReadProgressTopic: %v, want %s-0 and -1 at 50 and nothing of the open transaction", seen, src)
	}

	produce(100, 160)
	runOnce(t, p, f) // resumes at 50 on each partition
	remote := f.Policy.FormatRemoteTopic(f.Source, src)
	for part, recs := range p.ReadAll(t, "eu-west", remote) {
		if len(recs) != 80 {
			t.Errorf("%s[%d] holds %d records, want 80 (each once)", remote, part, len(recs))
		}
	}

	v := newProgressView(p.Clients, f, discard)
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = v.follow(fctx) }()
	defer v.close()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := v.catchUp(short, other); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("catch-up for the open transaction's partition: %v, want it waiting until its end", err)
	}
	if err := v.catchUp(ctx, tp{src, 0}); err != nil {
		t.Fatalf("catch-up for a partition the open transaction does not hold: %v", err)
	}
	if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := v.catchUp(ctx, other); err != nil {
		t.Fatal(err)
	}
	if n, ok := v.get(other); !ok || n != 5 {
		t.Errorf("after the commit the view holds %v at %d (%v), want 5", other, n, ok)
	}
}
