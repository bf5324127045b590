package replicate_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// lockedBuffer is a bytes.Buffer written by the engine's logger while the
// test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProbesFollowClusterOutages runs a flow on two kfake clusters, probing
// every 200 ms, and makes the target stop answering ApiVersions (the
// target's probe), then the source stop answering ListOffsets (the source's
// probe while a partition is copied). Each outage turns the cluster's
// mirrorctl_cluster_reachable to 0 and /readyz to not ready naming it
// (grace 0), makes records_behind unknown during the source's only, and
// logs one warning when it starts and one, with its length, when it ends.
// Before: nothing of this; readiness ignored the clusters.
func TestProbesFollowClusterOutages(t *testing.T) {
	replicate.SetPositionInterval(t, 200*time.Millisecond)
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	topic := testkit.Name("reach")
	p.CreateTopic(t, testkit.East, topic, 1, nil)
	p.Produce(t, testkit.East, &kgo.Record{Topic: topic, Value: []byte("a")}, &kgo.Record{Topic: topic, Value: []byte("b")})
	var westDown, eastDown atomic.Bool
	fail := func(c interface{ KeepControl() }, down *atomic.Bool) func(kmsg.Request) (kmsg.Response, error, bool) {
		return func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if down.Load() {
				return nil, errors.New("down"), true
			}
			return nil, nil, false
		}
	}
	p.West.ControlKey(int16(kmsg.ApiVersions), fail(p.West, &westDown))
	p.East.ControlKey(int16(kmsg.ListOffsets), fail(p.East, &eastDown))

	f := replicate.DefaultFlowConfig(testkit.East, testkit.West)
	f.ReplicationFactor, f.OffsetSyncsReplicationFactor, f.HeartbeatsReplicationFactor = 1, 1, 1
	f.ProgressReplicationFactor, f.CheckpointsReplicationFactor = 1, 1
	f.ProgressInterval, f.HeartbeatsInterval = 50*time.Millisecond, 100*time.Millisecond
	f.SessionTimeout = time.Second
	f.GroupID = testkit.Name("g-reach")
	mo := metrics.New(nil)
	mo.SetUnreachableGrace(0)
	logs := &lockedBuffer{}
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, Observer: mo, StopBudget: 2 * time.Second,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return within 30 s of the cancel")
		}
	})
	remote := testkit.East + "." + topic
	cluster := func(alias string) (metrics.ClusterStatus, bool) {
		for _, c := range mo.Status().Clusters {
			if c.Cluster == alias {
				return c, true
			}
		}
		return metrics.ClusterStatus{}, false
	}
	behind := func() int64 {
		for _, fl := range mo.Status().Flows {
			for _, ps := range fl.Partitions {
				if ps.Topic == remote {
					return ps.RecordsBehind
				}
			}
		}
		return -2
	}
	testkit.WaitFor(t, "both clusters reachable, the partition copied, ready", func() bool {
		e, ok1 := cluster(testkit.East)
		w, ok2 := cluster(testkit.West)
		return ok1 && ok2 && e.Reachable && w.Reachable && behind() == 0 && mo.Ready()
	})

	for _, tc := range []struct {
		alias string
		down  *atomic.Bool
	}{{testkit.West, &westDown}, {testkit.East, &eastDown}} {
		before := strings.Count(logs.String(), `msg="cluster unreachable" cluster=`+tc.alias)
		tc.down.Store(true)
		testkit.WaitFor(t, tc.alias+" unreachable and not ready", func() bool {
			c, _ := cluster(tc.alias)
			return !c.Reachable && c.Error != "" && strings.Contains(strings.Join(mo.NotReady(), "; "), "cluster "+tc.alias+" unreachable since ")
		})
		wantBehind := int64(0)
		if tc.alias == testkit.East {
			wantBehind = -1
		}
		if got := behind(); got != wantBehind {
			t.Errorf("%s down: records_behind %d in /status, want %d", tc.alias, got, wantBehind)
		}
		if n := strings.Count(logs.String(), `msg="cluster unreachable" cluster=`+tc.alias); n != before+1 {
			t.Errorf("%s down: %d outage-start lines, want one:\n%s", tc.alias, n-before, logs)
		}
		tc.down.Store(false)
		testkit.WaitFor(t, tc.alias+" reachable again and ready", func() bool {
			c, _ := cluster(tc.alias)
			return c.Reachable && mo.Ready() && behind() == 0
		})
		if n := strings.Count(logs.String(), `msg="cluster reachable again" cluster=`+tc.alias+` unreachable_for=`); n != 1 {
			t.Errorf("%s back: %d outage-end lines, want one:\n%s", tc.alias, n, logs)
		}
	}
}
