package replicate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// checkpoints returns the newest checkpoint per (group, topic, partition) in
// eu-west's us-east.checkpoints.internal, and the number of records.
func (p *clusterPair) checkpoints(t *testing.T) (map[string]mm2.Checkpoint, int) {
	t.Helper()
	recs := p.ReadAll(t, "eu-west", "us-east.checkpoints.internal")[0]
	out := map[string]mm2.Checkpoint{}
	n := 0
	for _, r := range recs {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			continue // TestGarbageInInternalTopicsIsSkipped writes some
		}
		n++
		out[fmt.Sprintf("%s/%s/%d", ck.Group, ck.Topic, ck.Partition)] = ck
	}
	return out, n
}

func TestCheckpointsTranslateLikeMM2(t *testing.T) {
	p := newClusterPair(t)
	topic, other := testkit.Name("orders"), testkit.Name("ignored")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.CreateTopic(t, "us-east", other, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 300)...) // partition 1 stays empty
	p.Produce(t, "us-east", sampleRecords(other, 1, 10)...)
	gZero, gMid, gEnd, gPartial, gNeg := testkit.Name("g-zero"), testkit.Name("g-mid"), testkit.Name("g-end"), testkit.Name("g-partial"), testkit.Name("g-neg")
	p.Commit(t, "us-east", gZero, map[string]map[int32]int64{topic: {0: 0}})
	p.Commit(t, "us-east", gMid, map[string]map[int32]int64{topic: {0: 150}})
	p.Commit(t, "us-east", gEnd, map[string]map[int32]int64{topic: {0: 300}, other: {0: 5}})
	p.Commit(t, "us-east", gPartial, map[string]map[int32]int64{topic: {0: 202, 1: 0}})
	p.Commit(t, "us-east", gNeg, map[string]map[int32]int64{topic: {0: -1}})

	f := testFlow("us-east", "eu-west")
	f.Topics.Include = mustList(t, "topics", topic) // other is not mirrored
	m := runOnce(t, p, f)
	// Syncs at 0, 101, 202 (immediate) and 299 (delayed, on flush).
	cks, n := p.checkpoints(t)
	remote := "us-east." + topic
	want := map[string][2]int64{ // key -> upstream, downstream
		gZero + "/" + remote + "/0": {0, 0}, // a committed 0 is a real position
		// MM2's store keeps older syncs only at exponentially growing
		// distances: once 299 arrives, 101 is dropped, so 150 starts from
		// the sync at 0 (+1). Conservative: re-reads, never skips.
		gMid + "/" + remote + "/0":     {150, 1},
		gEnd + "/" + remote + "/0":     {300, 300}, // sync 299->299, +1
		gPartial + "/" + remote + "/0": {202, 202}, // exactly at a sync
	}
	if n != len(want) || len(cks) != len(want) {
		t.Fatalf("%d checkpoint records %v, want exactly %d", n, cks, len(want))
	}
	for k, w := range want {
		ck, ok := cks[k]
		if !ok {
			t.Fatalf("no checkpoint %s; have %v", k, cks)
		}
		if ck.UpstreamOffset != w[0] || ck.DownstreamOffset != w[1] {
			t.Errorf("%s = %d->%d, want %d->%d", k, ck.UpstreamOffset, ck.DownstreamOffset, w[0], w[1])
		}
		if ck.Metadata != "meta-"+ck.Group {
			t.Errorf("%s metadata %q, want the source commit's", k, ck.Metadata)
		}
	}
	// No checkpoint for gPartial on the empty partition (no offset sync),
	// for gNeg (-1 is no offset), nor for the unmirrored topic.
	for _, k := range []string{gPartial + "/" + remote + "/1", gNeg + "/" + remote + "/0", gEnd + "/us-east." + other + "/0"} {
		if _, ok := cks[k]; ok {
			t.Errorf("unexpected checkpoint %s", k)
		}
	}
	stats := map[string]GroupStats{}
	for _, s := range m.GroupStats() {
		stats[s.Group] = s
	}
	if stats[gPartial].Checkpoints != 1 || stats[gEnd].Checkpoints != 1 {
		t.Errorf("group stats %+v", stats)
	}

	// A restart with nothing new writes nothing (the reloaded store filters
	// repeats); a real rewind on the source is checkpointed.
	runOnce(t, p, f)
	if _, n2 := p.checkpoints(t); n2 != n {
		t.Fatalf("restart wrote %d more checkpoints, want none", n2-n)
	}
	p.Commit(t, "us-east", gMid, map[string]map[int32]int64{topic: {0: 50}})
	runOnce(t, p, f)
	cks, _ = p.checkpoints(t)
	if ck := cks[gMid+"/"+remote+"/0"]; ck.UpstreamOffset != 50 || ck.DownstreamOffset != 1 {
		t.Fatalf("after a rewind to 50: %v, want 50->1", ck)
	}
}

func TestCheckpointOlderThanEverySyncIsSkipped(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("trimmed")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 200)...)
	// Retention removed the first 100 records before the mirror started.
	if _, err := p.Admin(t, "us-east").DeleteRecords(testkit.Context(t), kadm.Offsets{topic: {0: {Topic: topic, At: 100}}}); err != nil {
		t.Fatal(err)
	}
	old, cur := testkit.Name("g-old"), testkit.Name("g-cur")
	p.Commit(t, "us-east", old, map[string]map[int32]int64{topic: {0: 40}})
	p.Commit(t, "us-east", cur, map[string]map[int32]int64{topic: {0: 120}})
	runOnce(t, p, testFlow("us-east", "eu-west"))
	cks, _ := p.checkpoints(t)
	remote := "us-east." + topic
	if _, ok := cks[old+"/"+remote+"/0"]; ok {
		t.Fatalf("group at 40 got a checkpoint though the first sync is at 100: %v", cks)
	}
	if ck := cks[cur+"/"+remote+"/0"]; ck.UpstreamOffset != 120 || ck.DownstreamOffset != 1 {
		t.Fatalf("group at 120: %v, want 120->1 (sync 100->0, +1)", ck)
	}
}

func TestCheckpointsAcrossTransactionMarkers(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("txn-ck")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	cl, err := p.Clients.Client("us-east", "producer", kgo.TransactionalID(testkit.Name("tx")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	for txn := 0; txn < 2; txn++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	// Source 0-3, marker 4, 5-8, marker 9; target 0-7. A group that read the
	// first transaction commits 5 (past the marker).
	g := testkit.Name("g-txn")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 5}})
	runOnce(t, p, testFlow("us-east", "eu-west"))
	cks, _ := p.checkpoints(t)
	if ck := cks[g+"/us-east."+topic+"/0"]; ck.UpstreamOffset != 5 || ck.DownstreamOffset != 4 {
		t.Fatalf("checkpoint %v, want 5->4 (the sync at the gap is exact)", ck)
	}
}

func TestSyncGroupOffsetsSafely(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("synced")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 100)...)
	absent, ahead, active := testkit.Name("g-absent"), testkit.Name("g-ahead"), testkit.Name("g-active")
	for _, g := range []string{absent, ahead, active} {
		// 96 is a sync MM2's store keeps after 0..99 (it keeps 99, 98, 96,
		// 92, 88, 80, 64, 0), so the translation is exact.
		p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 96}})
	}
	f := testFlow("us-east", "eu-west")
	f.OffsetLagMax = 0 // a sync per record
	runOnce(t, p, f)   // copy first, so the remote topic exists
	f.SyncGroupOffsets = true
	remote := "us-east." + topic
	p.Commit(t, "eu-west", ahead, map[string]map[int32]int64{remote: {0: 99}})
	// An active member of `active` on the target.
	member, err := p.Clients.Client("eu-west", "consumer", kgo.ConsumerGroup(active), kgo.ConsumeTopics(remote))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	testkit.WaitFor(t, "active group to be Stable on the target", func() bool {
		d, err := p.Admin(t, "eu-west").DescribeGroups(context.Background(), active)
		return err == nil && d[active].State == "Stable"
	})
	m := runOnce(t, p, f)
	got := map[string]GroupStats{}
	for _, s := range m.GroupStats() {
		got[s.Group] = s
	}
	if got[absent].Sync != SyncCommitted || got[absent].Committed != 1 {
		t.Errorf("absent group: %+v, want committed", got[absent])
	}
	if got[ahead].Sync != SyncUpToDate {
		t.Errorf("ahead group: %+v, want up-to-date", got[ahead])
	}
	if got[active].Sync != SyncActive {
		t.Errorf("active group: %+v, want active", got[active])
	}
	offs := func(g string) int64 {
		resp, err := p.Admin(t, "eu-west").FetchOffsets(testkit.Context(t), g)
		if err != nil {
			t.Fatal(err)
		}
		o, ok := resp.Lookup(remote, 0)
		if !ok {
			return -2
		}
		return o.At
	}
	if at := offs(absent); at != 96 {
		t.Errorf("absent group on the target at %d, want 96", at)
	}
	if at := offs(ahead); at != 99 {
		t.Errorf("ahead group moved to %d; it must never be lowered", at)
	}
	if at := offs(active); at == 96 {
		t.Errorf("active group was committed to")
	}
}

// In continuous mode checkpoints follow the group as it moves, from syncs
// read as they are written, and a restart keeps going from the reloaded
// checkpoints (no rewind, no stall).
func TestCheckpointsContinuousAndAfterRestart(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("live")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	g := testkit.Name("g-live")
	f := testFlow("us-east", "eu-west")
	f.OffsetLagMax = 0
	f.CheckpointsInterval = 50 * time.Millisecond
	remote := "us-east." + topic
	latest := func() mm2.Checkpoint {
		// The flow leader creates the checkpoints topic once it leads:
		// until then there is nothing to read.
		ends, err := p.Admin(t, "eu-west").ListEndOffsets(testkit.Context(t), "us-east.checkpoints.internal")
		if o, ok := ends.Lookup("us-east.checkpoints.internal", 0); err != nil || !ok || o.Err != nil || o.Offset == 0 {
			return mm2.Checkpoint{}
		}
		cks, _ := p.checkpoints(t)
		return cks[g+"/"+remote+"/0"]
	}
	for round, at := range []int64{40, 80} {
		_, stop := runBackground(t, p, f)
		p.Produce(t, "us-east", sampleRange(topic, 1, int(at)-40, int(at))...)
		p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: at}})
		testkit.WaitFor(t, fmt.Sprintf("round %d: a checkpoint at %d", round, at), func() bool {
			ck := latest()
			return ck.UpstreamOffset == at && ck.DownstreamOffset == at
		})
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// Garbage, truncated records and tombstones in every internal topic the
// engine reads (progress, offset syncs, checkpoints) are skipped, never
// fatal, and the good records around them still count.
func TestGarbageInInternalTopicsIsSkipped(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("dirty")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 20)...)
	g := testkit.Name("g-dirty")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 20}})
	f := testFlow("us-east", "eu-west")
	runOnce(t, p, f)

	good, _ := mm2.Checkpoint{Group: g, Topic: "us-east." + topic, Partition: 0, UpstreamOffset: 20, DownstreamOffset: 20}.MarshalValue()
	garbage := []*kgo.Record{
		{Key: []byte("not json"), Value: []byte("{")},
		{Key: []byte{0, 9, 'x'}, Value: good[:5]},                // truncated
		{Key: []byte(`{"topic":"x","partition":0}`), Value: nil}, // a tombstone
	}
	for _, where := range []struct{ alias, topic string }{
		{"eu-west", ProgressTopic(f.Policy, "us-east")},
		{"us-east", "mm2-offset-syncs.eu-west.internal"},
		{"eu-west", "us-east.checkpoints.internal"},
	} {
		var recs []*kgo.Record
		for _, r := range garbage {
			recs = append(recs, &kgo.Record{Topic: where.topic, Key: r.Key, Value: r.Value})
		}
		p.Produce(t, where.alias, recs...)
	}
	// More data and a moved group: the next run copies exactly the new
	// records (progress still read) and checkpoints the new position (syncs
	// and checkpoints still read).
	p.Produce(t, "us-east", sampleRange(topic, 1, 20, 30)...)
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 30}})
	runOnce(t, p, f)
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 30 {
		t.Fatalf("copied %d, want 30", n)
	}
	cks, _ := p.checkpoints(t)
	if ck := cks[g+"/us-east."+topic+"/0"]; ck.UpstreamOffset != 30 || ck.DownstreamOffset != 30 {
		t.Fatalf("checkpoint %v, want 30->30", ck)
	}
}
