package replicate

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// One bogus but well-formed offset sync (downstream 2^50 while the target
// ends at 100) is counted and reported, and never acted on: no checkpoint
// names it and sync.group.offsets does not move the group there.
func TestBogusOffsetSyncNeverActedOn(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("bogus")
	remote := "us-east." + topic
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", numbered(topic, 0, 100)...)
	g := testkit.Name("g-bogus")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 96}})
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	runOnce(t, p, f) // copy first: the remote topic and the true syncs exist
	bogus := mm2.OffsetSync{Topic: topic, Partition: 0, UpstreamOffset: 96, DownstreamOffset: 1125899906842624}
	k, err := bogus.MarshalKey()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := bogus.MarshalValue()
	alias, syncTopic := f.OffsetSyncsTopic()
	p.Produce(t, alias, &kgo.Record{Topic: syncTopic, Partition: 0, Key: k, Value: v})

	f.SyncGroupOffsets = true
	var logs syncBuffer
	m, err := runOnceErr(t, p, slog.New(slog.NewTextHandler(&logs, nil)), f)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var gs GroupStats
	for _, s := range m.GroupStats() {
		if s.Group == g {
			gs = s
		}
	}
	if gs.Invalid < 1 {
		t.Fatalf("group stats %+v: the impossible checkpoint was not counted", gs)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "cannot be true") || !strings.Contains(logs.String(), "downstream=1125899906842624") {
		t.Fatalf("no ERROR line naming the impossible offset:\n%s", logs.String())
	}
	resp, err := p.Admin(t, "eu-west").FetchOffsets(testkit.Context(t), g)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := resp.Lookup(remote, 0); ok && o.At > 100 {
		t.Fatalf("group %s moved to %d on the target, which ends at 100", g, o.At)
	}
	for _, r := range p.ReadAll(t, "eu-west", f.Policy.CheckpointsTopic(f.Source))[0] {
		ck, err := mm2.DecodeCheckpoint(r.Key, r.Value)
		if err == nil && ck.DownstreamOffset > 100 {
			t.Fatalf("checkpoint written with downstream %d", ck.DownstreamOffset)
		}
	}
}
