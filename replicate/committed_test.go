package replicate

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// txnSteps writes to partition 0 of topic on alias: for each step, its
// records in a transaction that commits ("c"), aborts ("a"), or without a
// transaction ("p"). It returns the values a read_committed reader must see,
// in order.
func txnSteps(t *testing.T, p *clusterPair, alias, topic string, steps ...string) []string {
	t.Helper()
	ctx := testkit.Context(t)
	txn, err := p.Clients.Client(alias, "producer", kgo.TransactionalID(testkit.Name("tx")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	plain, err := p.Clients.Client(alias, "producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var want []string
	for i, st := range steps {
		var recs []*kgo.Record
		for j := 0; j < 3; j++ {
			recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("%s%d-%d", st, i, j))})
		}
		switch st {
		case "p":
			if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		case "c", "a":
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(st == "c")); err != nil {
				t.Fatal(err)
			}
		}
		if st != "a" {
			for _, r := range recs {
				want = append(want, string(r.Value))
			}
		}
	}
	return want
}

func values(recs []*kgo.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

// TestAbortedSourceTransactionsNeverCopied: by default the source is read
// read_committed; an aborted transaction's records never reach the target,
// committed ones and plain records are copied once, in order, and every
// offset sync maps a source record to its copy across the markers and the
// aborted ranges.
func TestAbortedSourceTransactionsNeverCopied(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("aborted")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	want := txnSteps(t, p, "us-east", topic, "c", "a", "p", "a", "a", "c", "p", "a")
	f := testFlow("us-east", "eu-west")
	f.OffsetLagMax = 2 // syncs often, so several land past the gaps
	m := runOnce(t, p, f)
	remote := "us-east." + topic
	got := values(p.ReadAll(t, "eu-west", remote)[0])
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("target holds %v,\nwant the committed and plain records once: %v", got, want)
	}
	for _, s := range m.Stats() {
		if s.Error != "" {
			t.Fatalf("partition %s[%d]: %s", s.Topic, s.Partition, s.Error)
		}
	}
	src := p.ReadAll(t, "us-east", topic)[0]
	dst := p.ReadAll(t, "eu-west", remote)[0]
	at := func(recs []*kgo.Record, off int64) *kgo.Record {
		for _, r := range recs {
			if r.Offset == off {
				return r
			}
		}
		return nil
	}
	syncs := readSyncs(t, p, "us-east", "mm2-offset-syncs.eu-west.internal")
	if len(syncs) < 3 {
		t.Fatalf("%d offset syncs, want several", len(syncs))
	}
	for _, s := range syncs {
		u, d := at(src, s.UpstreamOffset), at(dst, s.DownstreamOffset)
		if u == nil || d == nil || !bytes.Equal(u.Value, d.Value) || u.Value[0] == 'a' {
			t.Errorf("offset sync %d->%d does not map a copied source record to its copy (source %v, target %v)", s.UpstreamOffset, s.DownstreamOffset, u, d)
		}
	}
}

// TestReadUncommittedOptsOut: isolation.level=read_uncommitted on the
// source consumer (FlowConfig.ReadUncommitted) copies aborted records too.
func TestReadUncommittedOptsOut(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("uncommitted")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	txnSteps(t, p, "us-east", topic, "c", "a", "p")
	f := testFlow("us-east", "eu-west")
	f.ReadUncommitted = true
	runOnce(t, p, f)
	if got := values(p.ReadAll(t, "eu-west", "us-east."+topic)[0]); len(got) != 9 {
		t.Fatalf("target holds %v, want all 9 records (aborted ones too)", got)
	}
}

// TestReadInternalTopicReadsCommitted: an internal-topic read leaves out
// aborted records and those of a transaction still open, and does not wait
// for the open one to end.
func TestReadInternalTopicReadsCommitted(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("internal")
	p.CreateTopic(t, "eu-west", topic, 1, nil)
	want := txnSteps(t, p, "eu-west", topic, "c", "a", "p")
	ctx := testkit.Context(t)
	open, err := p.Clients.Client("eu-west", "producer", kgo.TransactionalID(testkit.Name("tx-open")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := open.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var got []string
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := ReadInternalTopic(rctx, p.Clients, "eu-west", topic, func(r *kgo.Record) { got = append(got, string(r.Value)) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("read %v, want the committed records %v", got, want)
	}
}
