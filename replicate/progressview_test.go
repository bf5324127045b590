package replicate

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/progress"
)

// TestProgressViewApply: of one poll's records, the newest that decodes
// wins per source partition, whatever the spelling of its key; an
// undecodable newest record is counted and the one before it taken.
func TestProgressViewApply(t *testing.T) {
	v := &progressView{log: slog.New(slog.DiscardHandler), vals: map[tp]heldValue{}}
	var recs []*kgo.Record
	var off int64
	add := func(key, val string) {
		r := &kgo.Record{Key: []byte(key), Offset: off}
		off++
		if val != "" {
			r.Value = []byte(val)
		}
		recs = append(recs, r)
	}
	enc := func(topic string, p int32, next int64) {
		k, val := progress.Encode(progress.Key{Topic: topic, Partition: p}, next, time.UnixMilli(1700000000000))
		add(string(k), string(val))
	}
	enc("orders", 0, 10)
	enc("orders", 1, 5)
	enc("orders", 0, 20)
	enc("orders", 1, 7)
	add(`{"topic":"orders","partition":1}`, `not json`) // newest of orders-1, garbage
	enc("orders", 2, 3)
	add(`{"partition":2,"topic":"orders"}`, `{"offset":4,"time_ms":1700000000000}`) // another spelling, newer
	enc("orders", 0, 30)
	v.apply(recs)
	want := map[tp]int64{{"orders", 0}: 30, {"orders", 1}: 7, {"orders", 2}: 4}
	for k, n := range want {
		if v.vals[k].Next != n {
			t.Errorf("next[%v] = %d, want %d", k, v.vals[k].Next, n)
		}
	}
	if len(v.vals) != len(want) {
		t.Errorf("vals = %v, want %v", v.vals, want)
	}
	if v.skipped != 1 {
		t.Errorf("skipped = %d, want 1 (the garbage record)", v.skipped)
	}
	// A later poll with one record still moves the view.
	recs = nil
	enc("orders", 1, 9)
	v.apply(recs)
	if v.vals[tp{"orders", 1}].Next != 9 {
		t.Errorf("next[orders-1] = %d after the second poll, want 9", v.vals[tp{"orders", 1}].Next)
	}
}

// TestReadProgressNewestPerKey: the progress read (readAtStart, through a
// view) keeps the newest position per key, and an undecodable newest record
// gives way to the older one, which is still found.
func TestReadProgressNewestPerKey(t *testing.T) {
	p := newClusterPair(t)
	f := testFlow("us-east", "eu-west")
	topic := ProgressTopic(f.Policy, f.Source)
	p.CreateTopic(t, "eu-west", topic, 1, nil)
	rec := func(tpc string, part int32, next int64) *kgo.Record {
		k, v := progress.Encode(progress.Key{Topic: tpc, Partition: part}, next, time.UnixMilli(1700000000000))
		return &kgo.Record{Topic: topic, Key: k, Value: v}
	}
	for i := int64(1); i <= 50; i++ {
		p.Produce(t, "eu-west", rec("orders", 0, i*10), rec("orders", 1, i))
	}
	got, err := readProgress(testkit.Context(t), f, p.Clients)
	if err != nil {
		t.Fatal(err)
	}
	if got[tp{"orders", 0}] != 500 || got[tp{"orders", 1}] != 50 || len(got) != 2 {
		t.Fatalf("progress = %v, want orders-0 at 500, orders-1 at 50", got)
	}
	k, _ := progress.Encode(progress.Key{Topic: "orders", Partition: 1}, 0, time.Now())
	p.Produce(t, "eu-west", &kgo.Record{Topic: topic, Key: k, Value: []byte("garbage")})
	got, err = readProgress(testkit.Context(t), f, p.Clients)
	if err != nil {
		t.Fatal(err)
	}
	if got[tp{"orders", 0}] != 500 || got[tp{"orders", 1}] != 50 {
		t.Fatalf("progress after a garbage newest record = %v, want orders-0 at 500, orders-1 at 50", got)
	}
}
