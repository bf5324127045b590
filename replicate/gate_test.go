package replicate

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// TestFetchGateGivesBackPauses: a task holds its partition (stopped) and is
// released; the partition's next task fetches it again at once, though kgo
// keeps a pause until it is resumed, across a remove and an add. A hold or
// seek by the released task afterwards (its retry or transaction loop still
// running) changes nothing for the new one.
func TestFetchGateGivesBackPauses(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("gate")
	p.CreateTopic(t, testkit.East, topic, 1, nil)
	p.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte("r0")}, &kgo.Record{Topic: topic, Value: []byte("r1")})
	cl := p.Client(t, testkit.East)
	g := newFetchGate(cl)
	fetched := func() int {
		ctx, cancel := context.WithTimeout(testkit.Context(t), 500*time.Millisecond)
		defer cancel()
		n := 0
		for ctx.Err() == nil && n < 2 {
			cl.PollFetches(ctx).EachRecord(func(*kgo.Record) { n++ })
		}
		return n
	}
	old := newTask(tp{topic, 0}, "us-east."+topic, -1)
	g.open(map[*task]int64{old: 0})
	g.hold(old, holdStopped)
	if n := fetched(); n != 0 {
		t.Fatalf("a held partition fetched %d records", n)
	}
	g.close([]*task{old})
	if got := cl.PauseFetchPartitions(nil); len(got) != 0 {
		t.Fatalf("paused after close: %v, want nothing", got)
	}
	next := newTask(tp{topic, 0}, "us-east."+topic, -1)
	g.open(map[*task]int64{next: 0})
	g.hold(old, holdRetry) // the released task's late hold
	g.seek(old, 1, holdRetry)
	if h := g.held(next); h != 0 {
		t.Fatalf("the new task's partition is held (%b) by the released task", h)
	}
	if n := fetched(); n != 2 {
		t.Fatalf("the new task fetched %d records, want 2 (from offset 0: the released task's seek is ignored)", n)
	}
	g.hold(next, holdRetry)
	g.hold(next, holdQueue)
	g.unhold(next, holdRetry)
	if h := g.held(next); h != holdQueue {
		t.Fatalf("holds %b, want the queue's only", h)
	}
}
