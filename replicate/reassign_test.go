package replicate_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/mirrorctl/mirrorctl/internal/metrics"
	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// view is what the three places an operator looks at say of one partition:
// the engine's Stats, /readyz (metrics.Observer.Ready) and
// mirrorctl_partition_up (absent: -1).
type view struct {
	state replicate.TaskState
	err   string
	ready bool
	up    float64
}

func (v view) String() string {
	return fmt.Sprintf("stats %s (error %q), /readyz %v, partition_up %v", v.state, v.err, v.ready, v.up)
}

func look(t *testing.T, m *replicate.Mirror, mo *metrics.Observer, reg *prometheus.Registry, remote string) view {
	t.Helper()
	v := view{up: -1, ready: mo.Ready()}
	for _, s := range m.Stats() {
		if s.RemoteTopic == remote && s.Partition == 0 {
			v.state, v.err = s.State, s.Error
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != metrics.PartitionUp {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "topic" && l.GetValue() == remote {
					v.up = mt.GetGauge().GetValue()
				}
			}
		}
	}
	return v
}

// TestStoppedPartitionGivenBackCopiesAgain: a partition stopped by a record
// its remote topic refuses (max.message.bytes 2000, a 5000-byte record) is
// taken away from this process by the group (its membership is expired: the
// heartbeat answers UNKNOWN_MEMBER_ID) after the operator raised the limit,
// and given back to it. The new task starts clean: it fetches again (kgo
// kept the old task's pause until it was resumed), copies the refused record
// and the rest in order with no gap, and /readyz, partition_up and Stats
// agree at every step: stopped (not ready, 0, stopped with the error), then
// running (ready, 1, running with no error). Before: the new task showed
// running with the old error, fetched nothing, and /readyz and
// partition_up kept saying stopped.
func TestStoppedPartitionGivenBackCopiesAgain(t *testing.T) {
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	topic := testkit.Name("back")
	remote := testkit.East + "." + topic
	p.CreateTopic(t, testkit.East, topic, 1, nil)
	limit := "2000"
	p.CreateTopic(t, testkit.West, remote, 1, map[string]*string{"max.message.bytes": &limit})
	noise := make([]byte, 5000) // incompressible
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	want := []string{}
	for i := 0; i < 5; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("a%d", i))})
		want = append(want, fmt.Sprintf("a%d", i))
	}
	recs = append(recs, &kgo.Record{Topic: topic, Value: noise})
	want = append(want, "big")
	for i := 0; i < 3; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("c%d", i))})
		want = append(want, fmt.Sprintf("c%d", i))
	}
	p.Produce(t, testkit.East, recs...)

	f := replicate.DefaultFlowConfig(testkit.East, testkit.West)
	f.ReplicationFactor, f.OffsetSyncsReplicationFactor, f.HeartbeatsReplicationFactor = 1, 1, 1
	f.ProgressReplicationFactor, f.CheckpointsReplicationFactor = 1, 1
	f.ProgressInterval, f.HeartbeatsInterval = 50*time.Millisecond, 100*time.Millisecond
	f.SessionTimeout, f.SyncTopicConfigs = time.Second, false
	f.GroupID = testkit.Name("g-back")
	mo := metrics.New(nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(mo)
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, Observer: mo, StopBudget: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	t.Cleanup(func() {
		t0 := time.Now()
		cancel()
		defer func() { t.Logf("stopped in %s", time.Since(t0)) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return within 30 s of the cancel")
		}
	})

	var v view
	testkit.WaitFor(t, "the partition stopped at the refused record", func() bool {
		v = look(t, m, mo, reg, remote)
		return v.state == replicate.TaskStopped
	})
	testkit.WaitFor(t, "/readyz and partition_up to say stopped too", func() bool {
		v = look(t, m, mo, reg, remote)
		return !v.ready && v.up == 0 && v.state == replicate.TaskStopped && strings.Contains(v.err, "MESSAGE_TOO_LARGE")
	})

	// The operator raises the limit; the group takes the partition away
	// (this member's session is expired) and gives it back.
	raised := "4000000"
	if _, err := p.Admin(t, testkit.West).AlterTopicConfigs(testkit.Context(t),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "max.message.bytes", Value: &raised}}, remote); err != nil {
		t.Fatal(err)
	}
	var expired atomic.Bool
	p.East.ControlKey(kmsg.Heartbeat.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.HeartbeatRequest)
		if req.Group != f.GroupID || expired.Load() {
			return nil, nil, false
		}
		expired.Store(true)
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	testkit.WaitFor(t, "the group to take the partition away and give it back", func() bool {
		st := m.Status()
		return len(st) == 1 && st[0].Lost >= 1 && st[0].Assigned >= 2
	})
	testkit.WaitFor(t, "the given-back partition to copy the rest", func() bool {
		got := p.ReadAll(t, testkit.West, remote)[0]
		return len(got) >= len(want)
	})
	var got []string
	for _, r := range p.ReadAll(t, testkit.West, remote)[0] {
		if len(r.Value) > 100 {
			got = append(got, "big")
		} else {
			got = append(got, string(r.Value))
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("target holds [%s], want [%s]: in order, no gap, nothing twice", strings.Join(got, ","), strings.Join(want, ","))
	}
	testkit.WaitFor(t, "Stats, /readyz and partition_up to say running", func() bool {
		v = look(t, m, mo, reg, remote)
		return v.ready && v.up == 1 && v.state == replicate.TaskRunning && v.err == ""
	})
	t.Logf("given back and copied: %s", v)
}
