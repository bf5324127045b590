package replicate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

// clusterPair is the shared kfake pair (us-east, eu-west) with this
// package's own helpers added.
type clusterPair struct{ *testkit.Pair }

func newClusterPair(t testing.TB) *clusterPair { return &clusterPair{testkit.NewPair(t)} }

// testFlow is a flow us-east->eu-west sized for one-broker clusters, with
// intervals short enough for tests.
func testFlow(source, target string) FlowConfig {
	f := DefaultFlowConfig(source, target)
	f.ReplicationFactor = 1
	f.OffsetSyncsReplicationFactor = 1
	f.HeartbeatsReplicationFactor = 1
	f.ProgressReplicationFactor = 1
	f.CheckpointsReplicationFactor = 1
	f.ProgressInterval = 50 * time.Millisecond
	f.HeartbeatsInterval = 100 * time.Millisecond
	f.OffsetFlushInterval = 100 * time.Millisecond
	return f
}

func runOnce(t testing.TB, p *clusterPair, flows ...FlowConfig) *Mirror {
	t.Helper()
	m, err := New(Options{Flows: flows, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(testkit.Context(t)); err != nil {
		t.Fatalf("run once: %v", err)
	}
	return m
}

// runBackground starts a continuous mirror and returns a stop func that
// cancels it and returns Run's error.
func runBackground(t testing.TB, p *clusterPair, flows ...FlowConfig) (*Mirror, func() error) {
	t.Helper()
	m, err := New(Options{Flows: flows, Clients: p.Clients})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	var rerr error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case rerr = <-done:
			case <-time.After(40 * time.Second):
				rerr = fmt.Errorf("mirror did not stop within 40s")
			}
		})
		return rerr
	}
	t.Cleanup(func() { _ = stop() })
	return m, stop
}
