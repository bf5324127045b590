package flowstatus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/flowstatus"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/lag"
	"github.com/mirrorctl/mirrorctl/replicate"
)

func testFlow(group string) replicate.FlowConfig {
	f := replicate.DefaultFlowConfig(testkit.East, testkit.West)
	f.ReplicationFactor, f.OffsetSyncsReplicationFactor, f.HeartbeatsReplicationFactor = 1, 1, 1
	f.ProgressReplicationFactor, f.CheckpointsReplicationFactor = 1, 1
	f.EmitHeartbeats, f.SyncTopicConfigs = false, false
	f.ProgressInterval, f.OffsetFlushInterval = 50*time.Millisecond, 100*time.Millisecond
	f.GroupID, f.TasksMax, f.SessionTimeout = group, 0, 2*time.Second
	return f
}

// start runs a replicate engine on f until the returned stop is called.
func start(t *testing.T, p *testkit.Pair, f replicate.FlowConfig, instanceID string) (*replicate.Mirror, func()) {
	t.Helper()
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, InstanceID: instanceID, StopBudget: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("engine: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the engine did not stop within 30 s")
		}
	}
	t.Cleanup(stop)
	return m, stop
}

func read(t *testing.T, p *testkit.Pair, f replicate.FlowConfig) flowstatus.Flow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fs, err := flowstatus.Read(ctx, p.Clients, f, flowstatus.Options{Now: time.Now(), FetchTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// Two replicate processes share a flow's four partitions: status, read
// from Kafka alone, lists both as copying (one with its static instance
// id), one as the leader, each partition owned by the process the engine
// says runs it, at the position the progress records (every record
// copied, none behind), with when it was written. Both stopped, the
// group has no members, nobody leads, no partition has an owner: three
// problems, the positions kept.
func TestReadTwoProcesses(t *testing.T) {
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	topic := testkit.Name("orders")
	const parts, n = 4, 25
	p.CreateTopic(t, testkit.East, topic, parts, nil)
	var recs []*kgo.Record
	for part := int32(0); part < parts; part++ {
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte("v")})
		}
	}
	p.Produce(t, testkit.East, recs...)
	f := testFlow(testkit.Name("mirrorctl-status"))
	before := time.Now().Add(-time.Second)

	ma, stopA := start(t, p, f, "host-a-0")
	mb, stopB := start(t, p, f, "")
	owns := func(m *replicate.Mirror) map[string]bool {
		out := map[string]bool{}
		for _, s := range m.Stats() {
			if s.Owner != "" {
				out[fmt.Sprintf("%s[%d]", s.Topic, s.Partition)] = true
			}
		}
		return out
	}
	var fs flowstatus.Flow
	testkit.WaitFor(t, "both processes copying, every record's progress written, one leader", func() bool {
		if len(owns(ma)) == 0 || len(owns(mb)) == 0 || len(owns(ma))+len(owns(mb)) != parts {
			return false
		}
		fs = read(t, p, f)
		if len(fs.Processes) != 2 || fs.Leader == "" || len(fs.Problems) != 0 {
			return false
		}
		for _, pt := range fs.Partitions {
			if pt.Position != n || pt.Owner == "" {
				return false
			}
		}
		return true
	})
	byClient := map[string]flowstatus.Process{}
	for _, pr := range fs.Processes {
		byClient[pr.ClientID] = pr
		if pr.Role != flowstatus.RoleCopying || pr.MemberID == "" || pr.LeaderMemberID == "" || pr.Host == "" {
			t.Errorf("process %+v: want copying, in both groups, with a host", pr)
		}
	}
	instances := map[string]bool{}
	leaders := 0
	for _, pr := range fs.Processes {
		instances[pr.InstanceID] = true
		if pr.Leader {
			leaders++
			if pr.ClientID != fs.Leader {
				t.Errorf("process %s leads, the flow says %s", pr.ClientID, fs.Leader)
			}
		}
	}
	if !instances["host-a-0"] || !instances[""] || leaders != 1 {
		t.Errorf("instance ids %v and %d leaders, want host-a-0 and a dynamic member, and 1 leader", instances, leaders)
	}
	if len(fs.Partitions) != parts {
		t.Fatalf("%d partitions, want %d: %+v", len(fs.Partitions), parts, fs.Partitions)
	}
	ownedBy := map[string]string{}
	for _, pr := range fs.Processes {
		for _, tp := range pr.Partitions {
			ownedBy[tp] = pr.ClientID
		}
	}
	for i, pt := range fs.Partitions {
		name := fmt.Sprintf("%s[%d]", topic, pt.Partition)
		engine := "b"
		if owns(ma)[name] {
			engine = "a"
		}
		want := map[string]string{"a": "", "b": ""}
		for _, pr := range fs.Processes {
			if pr.InstanceID == "host-a-0" {
				want["a"] = pr.ClientID
			} else {
				want["b"] = pr.ClientID
			}
		}
		switch {
		case pt.Partition != int32(i) || pt.SourceTopic != topic || pt.Topic != testkit.East+"."+topic:
			t.Errorf("row %d is %s -> %s[%d], want sorted", i, pt.SourceTopic, pt.Topic, pt.Partition)
		case pt.Owner != want[engine] || ownedBy[name] != pt.Owner:
			t.Errorf("%s: owner %q, process list says %q, engine %s (%q) runs it", name, pt.Owner, ownedBy[name], engine, want[engine])
		case pt.Position != n || pt.SourceEndOffset != n || pt.RecordsBehind != 0 || pt.From != lag.FromProgress || pt.State != lag.StateOK:
			t.Errorf("%s: %+v, want position %d, end %d, 0 behind, from progress, ok", name, pt, n, n)
		case pt.ProgressTime == nil || pt.ProgressTime.Before(before) || pt.ProgressAgeMs == nil || *pt.ProgressAgeMs < 0:
			t.Errorf("%s: progress time %v, age %v, want one after %v", name, pt.ProgressTime, pt.ProgressAgeMs, before)
		case (engine == "a") != (pt.OwnerInstanceID == "host-a-0"):
			t.Errorf("%s: owner instance %q", name, pt.OwnerInstanceID)
		}
	}

	stopA()
	stopB()
	fs = read(t, p, f)
	if len(fs.Processes) != 0 || fs.Leader != "" {
		t.Errorf("after both stopped: %d processes, leader %q, want none", len(fs.Processes), fs.Leader)
	}
	for _, pt := range fs.Partitions {
		if pt.Owner != "" || pt.Position != n {
			t.Errorf("after both stopped: %s[%d] owner %q position %d, want none and %d", pt.SourceTopic, pt.Partition, pt.Owner, pt.Position, n)
		}
	}
	problems := strings.Join(fs.Problems, "\n")
	if len(fs.Problems) != 2 || !strings.Contains(problems, "group "+f.GroupID+" on "+testkit.East+" has no members") ||
		!strings.Contains(problems, "no process leads the flow") {
		t.Errorf("problems %q, want the group without members and no leader", fs.Problems)
	}
}

// A source cluster that does not answer fails the read, naming it: the
// owners are unknown, never shown as none or as fine.
func TestReadSourceDownFails(t *testing.T) {
	p := testkit.NewPair(t)
	f := testFlow(testkit.Name("mirrorctl-down"))
	p.CreateTopic(t, testkit.West, replicate.ProgressTopic(f.Policy, testkit.East), 1, nil)
	clients := testkit.NewClients(t, map[string][]string{testkit.East: {"127.0.0.1:1"}, testkit.West: p.Addrs(testkit.West)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := flowstatus.Read(ctx, clients, f, flowstatus.Options{Now: time.Now(), FetchTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "source "+testkit.East+" does not answer") {
		t.Fatalf("Read with the source down: %v, want an error naming %s", err, testkit.East)
	}
}
