package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// An idle group's checkpoint age restarts at every listing of the source
// groups while the mirror runs (its checkpoint is confirmed current), so
// the shipped MirrorCheckpointsStale rule never fires for it.
func TestIdleGroupCheckpointStaysFresh(t *testing.T) {
	p := testkit.NewPair(t)
	topic, group := testkit.Name("idle"), testkit.Name("g-idle")
	p.CreateTopic(t, testkit.East, topic, 1, nil)
	var recs []*kgo.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte("v")})
	}
	p.Produce(t, testkit.East, recs...)
	p.Commit(t, testkit.East, group, map[string]map[int32]int64{topic: {0: 5}})
	f := replicate.DefaultFlowConfig(testkit.East, testkit.West)
	f.ReplicationFactor, f.OffsetSyncsReplicationFactor, f.HeartbeatsReplicationFactor = 1, 1, 1
	f.ProgressReplicationFactor, f.CheckpointsReplicationFactor = 1, 1
	f.EmitHeartbeats = false
	f.CheckpointsInterval = 100 * time.Millisecond
	f.ProgressInterval, f.OffsetFlushInterval = 50*time.Millisecond, 100*time.Millisecond
	o := New(nil)
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, Observer: o})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testkit.Context(t))
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	gk := [3]string{testkit.East, testkit.West, group}
	at := func() time.Time { o.mu.Lock(); defer o.mu.Unlock(); return o.groups[gk] }
	testkit.WaitFor(t, "the group's first checkpoint", func() bool { return !at().IsZero() })
	first := at()
	testkit.WaitFor(t, "a later listing to confirm the idle group's checkpoint", func() bool { return at().After(first) })
}
