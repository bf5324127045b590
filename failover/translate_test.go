package failover

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

func TestTranslateMirrored(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 300)...)
	p.Produce(t, "us-east", records(topic, 1, 0, 50)...)
	gZero, gMid, gEnd := testkit.Name("g-zero"), testkit.Name("g-mid"), testkit.Name("g-end")
	p.Commit(t, "us-east", gZero, map[string]map[int32]int64{topic: {0: 0}})
	p.Commit(t, "us-east", gMid, map[string]map[int32]int64{topic: {0: 150}}) // no commit on partition 1
	p.Commit(t, "us-east", gEnd, map[string]map[int32]int64{topic: {0: 300, 1: 50}})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	e := p.engine(t, f)
	ctx := testkit.Context(t)

	exact, err := e.Translate(ctx, []string{gZero, gMid, gEnd}, ModeExact)
	if err != nil {
		t.Fatal(err)
	}
	ck, err := e.Translate(ctx, []string{gMid}, ModeCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	auto, err := e.Translate(ctx, []string{gMid}, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		res       *TranslateResult
		group     string
		partition int32
		src, tgt  string
		mode      Mode
		rereads   string
		reason    string
	}{
		{"committed at 0", exact, gZero, 0, "0", "0", ModeExact, "0", ""},
		{"mid-log, between kept syncs", exact, gMid, 0, "150", "150", ModeExact, "0", ""},
		{"no source commit", exact, gMid, 1, "nil", "nil", ModeExact, "nil", "no committed offset on us-east"},
		{"at the end", exact, gEnd, 0, "300", "300", ModeExact, "0", ""},
		{"at the end, partition 1", exact, gEnd, 1, "50", "50", ModeExact, "0", ""},
		// MM2 keeps the syncs at 0 and 299 only, so its checkpoint for 150
		// is 0+1: 149 records are read again.
		{"checkpoint mode", ck, gMid, 0, "150", "1", ModeCheckpoint, "149", ""},
		{"auto with the source up", auto, gMid, 0, "150", "150", ModeExact, "0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rowOf(t, tt.res, tt.group, remote, tt.partition)
			if i64(r.SourceOffset) != tt.src || i64(r.TargetOffset) != tt.tgt || r.Mode != tt.mode || i64(r.Rereads) != tt.rereads || r.Reason != tt.reason {
				t.Fatalf("row %+v: source %s target %s rereads %s, want %s %s %s mode %s reason %q",
					r, i64(r.SourceOffset), i64(r.TargetOffset), i64(r.Rereads), tt.src, tt.tgt, tt.rereads, tt.mode, tt.reason)
			}
			if r.SourceTopic != topic {
				t.Fatalf("source topic %q", r.SourceTopic)
			}
		})
	}
	if r := rowOf(t, exact, gMid, remote, 0); r.Sync == nil || r.Sync.Upstream > 150 {
		t.Fatalf("sync %+v, want one at or below 150", r.Sync)
	}
}

// TestTranslateSimulatedMM2 builds what a real MM2 leaves behind, with no
// mirrorctl headers or progress: a remote topic produced directly (with a
// retried batch duplicated), and sparse offset syncs written directly.
func TestTranslateSimulatedMM2(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.CreateTopic(t, "eu-west", remote, 1, nil)
	src := records(topic, 0, 0, 100)
	p.Produce(t, "us-east", src...)
	// Target: 0..49, then 40..49 again (a retry), then 50..99.
	var copies []*kgo.Record
	for _, r := range src[:50] {
		copies = append(copies, copyOf(r, remote))
	}
	for _, r := range src[40:50] {
		copies = append(copies, copyOf(r, remote))
	}
	for _, r := range src[50:] {
		copies = append(copies, copyOf(r, remote))
	}
	p.Produce(t, "eu-west", copies...)
	p.CreateTopic(t, "us-east", "mm2-offset-syncs.eu-west.internal", 1, nil)
	p.writeSyncs(t, mm2.OffsetSync{Topic: topic, Partition: 0, UpstreamOffset: 0, DownstreamOffset: 0},
		mm2.OffsetSync{Topic: topic, Partition: 0, UpstreamOffset: 45, DownstreamOffset: 45})
	groups := map[string]int64{testkit.Name("g3"): 3, testkit.Name("g47"): 47, testkit.Name("g70"): 70, testkit.Name("g100"): 100, testkit.Name("g45"): 45}
	var names []string
	for g, u := range groups {
		p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: u}})
		names = append(names, g)
	}
	e := p.engine(t, testFlow(t, topic))
	res, err := e.Translate(testkit.Context(t), names, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{3: 3, 45: 45, 47: 47, 70: 80, 100: 110}
	for g, u := range groups {
		r := rowOf(t, res, g, remote, 0)
		if i64(r.TargetOffset) != i64(ptr(want[u])) || r.Mode != ModeExact || i64(r.Rereads) != "0" {
			t.Errorf("group at %d: %+v target %s, want %d exact", u, r, i64(r.TargetOffset), want[u])
		}
		if u == 70 && !strings.Contains(r.Reason, "matched by content at 80") {
			t.Errorf("group at 70: reason %q, want the content-match note", r.Reason)
		}
	}
}

// TestTranslateHardLogs checks exact mode against an oracle over sources with
// transaction markers (and an aborted transaction), compaction gaps, and a
// head deleted after the copy.
func TestTranslateHardLogs(t *testing.T) {
	p := newPair(t)
	txTopic, cTopic, dTopic := testkit.Name("tx"), testkit.Name("compact"), testkit.Name("deleted")
	p.CreateTopic(t, "us-east", txTopic, 1, nil)
	compact := "compact"
	p.CreateTopic(t, "us-east", cTopic, 1, map[string]*string{"cleanup.policy": &compact})
	p.CreateTopic(t, "us-east", dTopic, 1, nil)

	// Transactions: 3 committed batches and one aborted, with markers.
	txc, err := p.Clients.Client("us-east", "producer", kgo.TransactionalID(testkit.Name("txid")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	for b := 0; b < 4; b++ {
		if err := txc.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txc.ProduceSync(ctx, records(txTopic, 0, b*10, 10)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txc.EndTransaction(ctx, kgo.TransactionEndTry(b != 2)); err != nil {
			t.Fatal(err)
		}
	}
	txc.Close()
	// Compaction: keys repeat every 10 records; values stay unique.
	p.Produce(t, "us-east", records(cTopic, 0, 0, 200)...)
	p.Produce(t, "us-east", records(dTopic, 0, 0, 200)...)

	f := testFlow(t, txTopic, cTopic, dTopic)
	p.mirrorOnce(t, f)
	p.East.Compact()
	if err := p.East.DeleteRecords(dTopic, 0, 120); err != nil {
		t.Fatal(err)
	}
	e := p.engine(t, f)

	type c struct {
		topic string
		us    []int64
	}
	cases := []c{
		{txTopic, []int64{0, 5, 10, 11, 12, 25, 33, 43, 44}},
		{cTopic, []int64{0, 1, 50, 150, 185, 189, 190, 199, 200}},
		{dTopic, []int64{50, 119, 120, 121, 199, 200}},
	}
	for _, cs := range cases {
		// What a read_committed group reads, and what the mirror copies:
		// the aborted batch is on neither side.
		srcRecs := p.ReadAllCommitted(t, "us-east", cs.topic)[0]
		tgtRecs := p.ReadAll(t, "eu-west", "us-east."+cs.topic)[0]
		var groups []string
		byGroup := map[string]int64{}
		for _, u := range cs.us {
			g := testkit.Name("g")
			p.Commit(t, "us-east", g, map[string]map[int32]int64{cs.topic: {0: u}})
			groups = append(groups, g)
			byGroup[g] = u
		}
		res, err := e.Translate(ctx, groups, ModeExact)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups {
			u := byGroup[g]
			r := rowOf(t, res, g, "us-east."+cs.topic, 0)
			pos := u
			if len(srcRecs) > 0 && pos < srcRecs[0].Offset {
				pos = srcRecs[0].Offset
			}
			want, ok := oracle(srcRecs, tgtRecs, pos)
			if !ok {
				t.Fatalf("%s at %d: oracle has no answer", cs.topic, u)
			}
			if r.TargetOffset == nil || *r.TargetOffset != want || i64(r.Rereads) != "0" {
				t.Errorf("%s at %d: target %s rereads %s (%q), want %d", cs.topic, u, i64(r.TargetOffset), i64(r.Rereads), r.Reason, want)
			}
			if cs.topic == dTopic && u < 120 && !strings.Contains(r.Reason, fmt.Sprintf("records %d to 119 on us-east (%d) were deleted (retention) before the group read them: it never reads them, and resumes on eu-west at the copy of 120", u, 120-u)) {
				t.Errorf("%s at %d: reason %q, want the log-start note", cs.topic, u, r.Reason)
			}
		}
	}
}

func TestTranslateNotReplicatedAndSourceDown(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", records(topic, 0, 0, 100)...)
	gCk := testkit.Name("g-ck")
	p.Commit(t, "us-east", gCk, map[string]map[int32]int64{topic: {0: 60}})
	f := testFlow(t, topic)
	p.mirrorOnce(t, f)
	p.Produce(t, "us-east", records(topic, 0, 100, 20)...) // not mirrored
	gEnd, gMid := testkit.Name("g-end"), testkit.Name("g-mid")
	p.Commit(t, "us-east", gEnd, map[string]map[int32]int64{topic: {0: 120}})
	p.Commit(t, "us-east", gMid, map[string]map[int32]int64{topic: {0: 110}})
	e := p.engine(t, f)
	res, err := e.Translate(testkit.Context(t), []string{gEnd, gMid}, ModeExact)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{gEnd, gMid} {
		r := rowOf(t, res, g, remote, 0)
		if r.TargetOffset != nil || !r.NotReplicated || !strings.Contains(r.Reason, "not yet replicated") {
			t.Errorf("%s: %+v, want not yet replicated", g, r)
		}
	}

	// With the source gone, auto mode answers from the checkpoints.
	p.East.Close()
	res, err = e.Translate(testkit.Context(t), []string{gCk}, ModeAuto)
	if err != nil {
		t.Fatal(err)
	}
	r := rowOf(t, res, gCk, remote, 0)
	if r.Mode != ModeCheckpoint || i64(r.SourceOffset) != "60" || r.TargetOffset == nil || *r.TargetOffset > 60 || r.Rereads != nil || !res.SourceDown {
		t.Fatalf("source down: %+v (down %v)", r, res.SourceDown)
	}
	if _, err := e.Translate(testkit.Context(t), []string{gCk}, ModeExact); err == nil {
		t.Fatal("exact mode with the source down: no error")
	}
}

// TestTranslateOffsetOlderThanEverySync pins the reason exact mode gives
// when the group's committed offset (10) is older than every kept offset
// sync (15->15, MM2's translateDownstream would answer -1) and the source
// records that could place it are gone (deleted to the end, 20): no target
// offset, no sync, no rereads, and a reason that names the empty partition,
// the oldest sync and the mirror's progress.
func TestTranslateOffsetOlderThanEverySync(t *testing.T) {
	p := newPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.CreateTopic(t, "eu-west", remote, 1, nil)
	src := records(topic, 0, 0, 20)
	p.Produce(t, "us-east", src...)
	var copies []*kgo.Record
	for _, r := range src {
		copies = append(copies, copyOf(r, remote))
	}
	p.Produce(t, "eu-west", copies...)
	p.CreateTopic(t, "us-east", "mm2-offset-syncs.eu-west.internal", 1, nil)
	p.writeSyncs(t, mm2.OffsetSync{Topic: topic, Partition: 0, UpstreamOffset: 15, DownstreamOffset: 15})
	progress := replicate.ProgressTopic(testFlow(t).Policy, "us-east")
	p.CreateTopic(t, "eu-west", progress, 1, nil)
	p.Produce(t, "eu-west", &kgo.Record{Topic: progress,
		Key: []byte(`{"topic":"` + topic + `","partition":0}`), Value: []byte(`{"offset":20,"time_ms":0}`)})
	if err := p.East.DeleteRecords(topic, 0, 20); err != nil {
		t.Fatal(err)
	}
	g := testkit.Name("g-old")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 10}})

	res, err := p.engine(t, testFlow(t, topic)).Translate(testkit.Context(t), []string{g}, ModeExact)
	if err != nil {
		t.Fatal(err)
	}
	r := rowOf(t, res, g, remote, 0)
	wantReason := topic + "[0] on us-east holds no records (log start = end = 20); " +
		"the group's offset 10 is older than every kept offset sync (oldest 15->15); " +
		"the mirror's next source offset for " + topic + "[0] is 20"
	if r.Reason != wantReason {
		t.Errorf("reason %q\nwant   %q", r.Reason, wantReason)
	}
	if r.SourceTopic != topic || i64(r.SourceOffset) != "10" || r.TargetOffset != nil || r.Mode != ModeExact ||
		r.Sync != nil || r.Rereads != nil || r.NotReplicated || r.Metadata != "meta-"+g {
		t.Errorf("row %+v: source %s target %s rereads %s; want source 10, no target, exact, no sync, no rereads, replicated, metadata meta-%s",
			r, i64(r.SourceOffset), i64(r.TargetOffset), i64(r.Rereads), g)
	}
}
