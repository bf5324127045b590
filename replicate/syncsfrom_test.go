package replicate

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
	"github.com/mirrorctl/mirrorctl/replicate/syncstore"
)

// TestCheckpointerReadsSyncsOnlyAsFarBackAsGroupsNeed writes a long history
// of offset syncs of retired topics, then the syncs of a mirrored topic, and
// checks that the checkpointer's first read starts past the history when the
// groups' offsets do not need it, that each group still translates, never
// past its true position and at least as close to it as from a whole read,
// and that the whole topic is read when a group needs it, when no group has
// an offset, and for reverse checkpoints.
func TestCheckpointerReadsSyncsOnlyAsFarBackAsGroupsNeed(t *testing.T) {
	defer func(n int64) { syncScanChunk = n }(syncScanChunk)
	syncScanChunk = 16
	p := newClusterPair(t)
	syncTopic := "mm2-offset-syncs.eu-west.internal"
	p.CreateTopic(t, "us-east", syncTopic, 1, nil)
	orders := testkit.Name("orders")
	p.CreateTopic(t, "us-east", orders, 1, nil)
	var recs []*kgo.Record
	var all []mm2.OffsetSync
	add := func(s mm2.OffsetSync) {
		k, _ := s.MarshalKey()
		v, _ := s.MarshalValue()
		recs = append(recs, &kgo.Record{Topic: syncTopic, Partition: 0, Key: k, Value: v})
		all = append(all, s)
	}
	const history = 2000
	for i := 0; i < history; i++ {
		add(mm2.OffsetSync{Topic: "retired", Partition: int32(i % 5), UpstreamOffset: int64(i), DownstreamOffset: int64(i)})
	}
	// orders[0]: a sync every 100 records, the copy 7 records behind the
	// source (downstream = upstream - 7), with other syncs between.
	for u := int64(100); u <= 3000; u += 100 {
		add(mm2.OffsetSync{Topic: orders, Partition: 0, UpstreamOffset: u, DownstreamOffset: u - 7})
		add(mm2.OffsetSync{Topic: "other", Partition: 0, UpstreamOffset: u, DownstreamOffset: u})
	}
	p.Produce(t, "us-east", recs...)
	whole := syncstore.New(false)
	for _, s := range all {
		whole.Add(s)
	}
	whole.ReadToEnd()

	firstRead := func(t *testing.T, fullHistory bool) (*checkpointer, int64) {
		cfg := testFlow("us-east", "eu-west")
		c := newCheckpointer(cfg, p.Clients, slog.New(slog.DiscardHandler), time.Now, p.Admin(t, "us-east"), p.Admin(t, "eu-west"), nil)
		c.read.fullHistory = fullHistory
		ctx, cancel := context.WithCancel(testkit.Context(t))
		done := make(chan error, 1)
		go func() { done <- c.followSyncs(ctx, "us-east", syncTopic) }()
		testkit.WaitFor(t, "the offset syncs read to the end", c.syncs.Ready)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		c.read.mu.Lock()
		defer c.read.mu.Unlock()
		return c, c.read.from
	}

	t.Run("no group: the whole topic", func(t *testing.T) {
		if _, from := firstRead(t, false); from != 0 {
			t.Errorf("first read began at %d, want 0", from)
		}
	})

	g1, g2 := testkit.Name("g-recent"), testkit.Name("g-behind")
	p.Commit(t, "us-east", g1, map[string]map[int32]int64{orders: {0: 2950}})
	p.Commit(t, "us-east", g2, map[string]map[int32]int64{orders: {0: 1234}})
	t.Run("groups: from their oldest need", func(t *testing.T) {
		c, from := firstRead(t, false)
		if from <= history {
			t.Errorf("first read began at %d, want past the %d records of retired syncs", from, history)
		}
		for _, g := range []int64{2950, 1234, 3000} {
			got, full := c.syncs.Translate(orders, 0, g), whole.Translate(orders, 0, g)
			if !got.OK || !full.OK {
				t.Fatalf("offset %d: translated %+v (whole read %+v), want both", g, got, full)
			}
			if got.Offset > g-7 || got.Offset < full.Offset {
				t.Errorf("offset %d: translated to %d, want between the whole read's %d and the true position %d", g, got.Offset, full.Offset, g-7)
			}
		}
	})

	t.Run("reverse checkpoints: the whole topic", func(t *testing.T) {
		if _, from := firstRead(t, true); from != 0 {
			t.Errorf("first read began at %d, want 0", from)
		}
	})

	// A group before every sync of orders[0]: nothing read is enough.
	p.Commit(t, "us-east", testkit.Name("g-old"), map[string]map[int32]int64{orders: {0: 50}})
	t.Run("a group older than every sync: the whole topic", func(t *testing.T) {
		if _, from := firstRead(t, false); from != 0 {
			t.Errorf("first read began at %d, want 0", from)
		}
	})
}
