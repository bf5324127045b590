package replicate

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// reverseCheckpoints returns the newest reverse checkpoint per (group,
// topic, partition) in us-east's eu-west.checkpoints.internal with its
// record time, and the number of records.
func (p *clusterPair) reverseCheckpoints(t *testing.T) (map[string]mm2.Checkpoint, map[string]time.Time, int) {
	t.Helper()
	recs := p.ReadAll(t, "us-east", "eu-west.checkpoints.internal")[0]
	out, at := map[string]mm2.Checkpoint{}, map[string]time.Time{}
	for _, r := range recs {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err != nil {
			t.Fatalf("undecodable reverse checkpoint at %d: %v", r.Offset, err)
		}
		k := fmt.Sprintf("%s/%s/%d", ck.Group, ck.Topic, ck.Partition)
		out[k], at[k] = ck, r.Timestamp
	}
	return out, at, len(recs)
}

// TestReverseCheckpoints: with mirrorctl.reverse.checkpoints.enabled, the
// groups that consume the remote topic on eu-west are checkpointed back to
// us-east, in MM2's checkpoint format, named after the source topic, with
// the inverse offset-sync translation (may re-read, never skips), pinned
// by content between syncs; groups
// on topics the flow does not mirror are not; every pass writes them again
// (the record time is when the mirror last saw the group there).
func TestReverseCheckpoints(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("orders")
	local := testkit.Name("local") // eu-west's own topic
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.CreateTopic(t, "eu-west", local, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 300)...) // partition 1 stays empty
	p.Produce(t, "eu-west", sampleRecords(local, 0, 5)...)

	f := testFlow("us-east", "eu-west")
	f.Topics.Include = mustList(t, "topics", topic)
	f.ReverseCheckpoints = true
	runOnce(t, p, f) // copies, syncs at 0, 202 and 299 (see TestCheckpointsTranslateLikeMM2)
	if _, _, n := p.reverseCheckpoints(t); n != 0 {
		t.Fatalf("%d reverse checkpoints before any group consumed on eu-west", n)
	}

	remote := "us-east." + topic
	gZero, gMid, gSync, gEnd, gLocal := testkit.Name("g-zero"), testkit.Name("g-mid"), testkit.Name("g-sync"), testkit.Name("g-end"), testkit.Name("g-local")
	p.Commit(t, "eu-west", gZero, map[string]map[int32]int64{remote: {0: 0}})
	p.Commit(t, "eu-west", gMid, map[string]map[int32]int64{remote: {0: 150}})
	p.Commit(t, "eu-west", gSync, map[string]map[int32]int64{remote: {0: 202, 1: 0}})
	p.Commit(t, "eu-west", gEnd, map[string]map[int32]int64{remote: {0: 300}, local: {0: 3}})
	p.Commit(t, "eu-west", gLocal, map[string]map[int32]int64{local: {0: 5}})
	before := time.Now()
	runOnce(t, p, f)
	cks, at, n := p.reverseCheckpoints(t)
	want := map[string][2]int64{ // key -> upstream (eu-west), downstream (us-east)
		gZero + "/" + topic + "/0": {0, 0},
		// Between the syncs 0->0 and 202->202: pinned by content (the
		// inverse rule alone answers 1, one past 0->0).
		gMid + "/" + topic + "/0":  {150, 150},
		gSync + "/" + topic + "/0": {202, 202}, // exactly at a sync
		gEnd + "/" + topic + "/0":  {300, 300}, // sync 299->299, +1
	}
	if n != len(want) || len(cks) != len(want) {
		t.Fatalf("%d reverse checkpoint records %v, want exactly %d", n, cks, len(want))
	}
	for k, w := range want {
		ck, ok := cks[k]
		if !ok {
			t.Fatalf("no reverse checkpoint %s; have %v", k, cks)
		}
		if ck.UpstreamOffset != w[0] || ck.DownstreamOffset != w[1] {
			t.Errorf("%s = %d->%d, want %d->%d", k, ck.UpstreamOffset, ck.DownstreamOffset, w[0], w[1])
		}
		if ck.Metadata != "meta-"+ck.Group {
			t.Errorf("%s metadata %q, want the eu-west commit's", k, ck.Metadata)
		}
		if at[k].Before(before.Add(-time.Second)) {
			t.Errorf("%s written at %v, before the pass started (%v)", k, at[k], before)
		}
	}
	// The forward checkpoints topic on eu-west has none of them.
	for _, r := range p.ReadAll(t, "eu-west", "us-east.checkpoints.internal")[0] {
		if ck, err := mm2.DecodeCheckpoint(r.Key, r.Value); err == nil && ck.Topic == topic {
			t.Fatalf("a reverse checkpoint in the forward topic: %+v", ck)
		}
	}

	// A second pass with nothing moved writes every one again, later.
	first := at
	runOnce(t, p, f)
	cks, at, n2 := p.reverseCheckpoints(t)
	if n2 != 2*n {
		t.Fatalf("second pass: %d records, want %d (each checkpoint confirmed)", n2, 2*n)
	}
	for k, w := range want {
		if ck := cks[k]; ck.UpstreamOffset != w[0] || ck.DownstreamOffset != w[1] {
			t.Errorf("%s confirmed as %d->%d, want %d->%d", k, ck.UpstreamOffset, ck.DownstreamOffset, w[0], w[1])
		}
		if !at[k].After(first[k]) {
			t.Errorf("%s: confirmation at %v, first at %v", k, at[k], first[k])
		}
	}
	// A group that moves on eu-west moves its reverse checkpoint.
	p.Commit(t, "eu-west", gMid, map[string]map[int32]int64{remote: {0: 299}})
	runOnce(t, p, f)
	cks, _, _ = p.reverseCheckpoints(t)
	if ck := cks[gMid+"/"+topic+"/0"]; ck.UpstreamOffset != 299 || ck.DownstreamOffset != 299 {
		t.Fatalf("after the group moved to 299: %+v, want 299->299", ck)
	}
}

// TestReverseCheckpointsNeedCheckpoints: the flow is refused at start
// rather than running without the reverse checkpoints it was asked for.
func TestReverseCheckpointsNeedCheckpoints(t *testing.T) {
	f := testFlow("us-east", "eu-west")
	f.ReverseCheckpoints = true
	f.EmitCheckpoints = false
	if err := f.Validate(); err == nil {
		t.Fatal("reverse checkpoints without checkpoints: no error")
	}
}

// A reverse checkpoint whose records between the sync and the group's
// commit are not all copies (records written to the remote topic on
// eu-west by someone else) is not pinned: it keeps the inverse rule's
// answer, one past the sync (may re-read, never skips).
func TestReverseCheckpointPinKeepsTheRuleOnForeignRecords(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("orders")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 300)...)
	f := testFlow("us-east", "eu-west")
	f.Topics.Include = mustList(t, "topics", topic)
	f.ReverseCheckpoints = true
	runOnce(t, p, f) // syncs at 0, 202 and 299
	var foreign []*kgo.Record
	for i := 0; i < 10; i++ {
		foreign = append(foreign, &kgo.Record{Topic: remote, Value: []byte(fmt.Sprint("not-a-copy-", i))})
	}
	p.Produce(t, "eu-west", foreign...) // remote offsets 300..309
	g := testkit.Name("g")
	p.Commit(t, "eu-west", g, map[string]map[int32]int64{remote: {0: 305}})
	runOnce(t, p, f)
	cks, _, _ := p.reverseCheckpoints(t)
	ck, ok := cks[g+"/"+topic+"/0"]
	if !ok || ck.UpstreamOffset != 305 || ck.DownstreamOffset != 300 {
		t.Fatalf("reverse checkpoint %+v (found %v), want 305->300: the rule's answer, one past the sync 299->299", ck, ok)
	}
}
