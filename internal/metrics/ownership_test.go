package metrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
)

// process is one replicate process of a two-process test: its engine,
// its metrics and its stop.
type process struct {
	name string
	m    *replicate.Mirror
	o    *Observer
	reg  *prometheus.Registry
	stop func()
}

func startProcess(t *testing.T, p *testkit.Pair, name string, flows ...replicate.FlowConfig) *process {
	t.Helper()
	o := New(nil)
	reg := prometheus.NewRegistry()
	reg.MustRegister(o)
	m, err := replicate.New(replicate.Options{Flows: flows, Clients: p.Clients, Observer: o, StopBudget: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o.SetMembership(m.Status)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	pr := &process{name: name, m: m, o: o, reg: reg}
	pr.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("%s did not stop within 30 s", name)
		}
	}
	t.Cleanup(pr.stop)
	return pr
}

// series returns, per metric name, the label sets this process exports,
// each as "k=v,k=v" in label order.
func (pr *process) series(t *testing.T) map[string][]string {
	t.Helper()
	mfs, err := pr.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			var ls []string
			for _, l := range mt.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			out[mf.GetName()] = append(out[mf.GetName()], strings.Join(ls, ","))
		}
	}
	return out
}

// tasks is how many partition tasks the process runs for flow.
func (pr *process) tasks(flow string) int {
	for _, st := range pr.m.Status() {
		if st.Flow == flow {
			return st.Tasks
		}
	}
	return 0
}

// partitionKey is the partition a per-partition series names,
// "<topic>[<partition>]", or "" when it names none.
func partitionKey(labels string) string {
	var topic, part string
	for _, kv := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "topic":
			topic = v
		case "partition":
			part = v
		}
	}
	if topic == "" || part == "" {
		return ""
	}
	return topic + "[" + part + "]"
}

// exporters counts, per partition, the processes exporting name for it.
func exporters(t *testing.T, name string, procs ...*process) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, pr := range procs {
		for _, ls := range pr.series(t)[name] {
			if k := partitionKey(ls); k != "" {
				out[k] = append(out[k], pr.name)
			}
		}
	}
	return out
}

// owned returns the partitions pr's engine runs a task for now,
// "<remote topic>[<partition>]".
func owned(pr *process) map[string]bool {
	out := map[string]bool{}
	for _, s := range pr.m.Stats() {
		if s.Owner != "" {
			out[fmt.Sprintf("%s[%d]", s.RemoteTopic, s.Partition)] = true
		}
	}
	return out
}

// perPartition are the series a partition has in the process that copies
// it; none of them may appear in another.
var perPartition = []string{RecordCount, RecordRate, ByteCount, ByteRate, RecordAge, ReplicationLatency + suffixMax, RecordsBehind, PartitionUp, RecordsSkipped, LossEvents}

// coverage says what is wrong with how procs export the per-partition
// series of want (the remote partitions): "" when each is exported by
// exactly one process, the one whose engine runs its task.
func coverage(t *testing.T, want []string, procs ...*process) string {
	t.Helper()
	owners := map[string]string{}
	for _, pr := range procs {
		for k := range owned(pr) {
			owners[k] += pr.name
		}
	}
	for _, name := range perPartition {
		got := exporters(t, name, procs...)
		for _, k := range want {
			by := got[k]
			if name == RecordsSkipped || name == LossEvents {
				by = dedupe(by) // one series per loss reason
			}
			if len(by) != 1 || owners[k] != by[0] {
				return fmt.Sprintf("%s of %s exported by %v, owned by %q", name, k, by, owners[k])
			}
		}
		if len(got) != len(want) {
			return fmt.Sprintf("%s exported for %d partitions, want %d", name, len(got), len(want))
		}
	}
	return ""
}

// hasLabel reports whether labels (as series writes them) hold name=value.
func hasLabel(labels, name, value string) bool {
	for _, kv := range strings.Split(labels, ",") {
		if kv == name+"="+value {
			return true
		}
	}
	return false
}

func dedupe(xs []string) []string {
	sort.Strings(xs)
	var out []string
	for i, x := range xs {
		if i == 0 || x != xs[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Two replicate processes share a flow's six partitions through its group:
// every per-partition series (MM2's kafka_connect_mirror_* and
// mirrorctl_partition_up, records_behind, ...) is exported by exactly one
// of them, the one that copies the partition, so a sum over pods counts
// each partition once; the checkpoint series and flow_leader 1 only by the
// flow leader. When one process stops, the other exports all six and the
// stopped one none. A disabled reverse pair that only emits heartbeats is
// shown in /status as disabled, not up and not leader, with no
// flow_leader series; the process that emits its heartbeats says so.
func TestTwoProcessesExportEachPartitionOnce(t *testing.T) {
	p := testkit.NewPairWith(t, kfake.GroupMinSessionTimeout(100*time.Millisecond))
	topic, group := testkit.Name("shared"), testkit.Name("g-shared")
	remote := testkit.East + "." + topic
	const parts = 6
	p.CreateTopic(t, testkit.East, topic, parts, nil)
	var recs []*kgo.Record
	for part := int32(0); part < parts; part++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: part, Value: []byte("v")})
		}
	}
	p.Produce(t, testkit.East, recs...)
	p.Commit(t, testkit.East, group, map[string]map[int32]int64{topic: {0: 5, 1: 5}})

	f := replicate.DefaultFlowConfig(testkit.East, testkit.West)
	f.ReplicationFactor, f.OffsetSyncsReplicationFactor, f.HeartbeatsReplicationFactor = 1, 1, 1
	f.ProgressReplicationFactor, f.CheckpointsReplicationFactor = 1, 1
	f.CheckpointsInterval, f.HeartbeatsInterval = 100*time.Millisecond, 100*time.Millisecond
	f.ProgressInterval, f.OffsetFlushInterval = 50*time.Millisecond, 100*time.Millisecond
	f.GroupID, f.TasksMax, f.SessionTimeout = testkit.Name("mirrorctl-shared"), 0, 2*time.Second
	back := replicate.DefaultFlowConfig(testkit.West, testkit.East)
	back.HeartbeatsReplicationFactor, back.HeartbeatsInterval = 1, 100*time.Millisecond
	back.Enabled, back.EmitHeartbeats = false, true
	back.GroupID, back.SessionTimeout = testkit.Name("mirrorctl-back"), 2*time.Second
	flow := f.Name()

	// The flow copies the topic and the heartbeats the reverse pair
	// writes to the source (MM2 replicates heartbeats topics).
	a := startProcess(t, p, "a", f, back)
	testkit.WaitFor(t, "a copies the topic and the heartbeats, and leads", func() bool {
		return a.tasks(flow) == parts+1 && len(a.series(t)[CheckpointLatency]) > 0
	})
	var want []string
	for k := range owned(a) {
		want = append(want, k)
	}
	sort.Strings(want)
	ours := 0
	for _, k := range want {
		if strings.HasPrefix(k, remote+"[") {
			ours++
		}
	}
	if len(want) != parts+1 || ours != parts {
		t.Fatalf("a copies %v, want %s[0..5] and the heartbeats", want, remote)
	}
	b := startProcess(t, p, "b", f, back)
	testkit.WaitFor(t, "the partitions spread over a and b", func() bool {
		na, nb := a.tasks(flow), b.tasks(flow)
		return na > 0 && nb > 0 && na+nb == len(want)
	})
	var why string
	testkit.WaitFor(t, "each partition's series in exactly one process", func() bool {
		why = coverage(t, want, a, b)
		return why == ""
	})
	// Steady: still so at a second look, with the positions reported.
	if why = coverage(t, want, a, b); why != "" {
		t.Fatal(why)
	}
	t.Logf("a copies %d partitions, b %d", a.tasks(flow), b.tasks(flow))

	leaders, ckExporters := 0.0, 0
	for _, pr := range []*process{a, b} {
		ss := pr.series(t)
		if len(ss[CheckpointLatency]) > 0 || len(ss[CheckpointAgeSeconds]) > 0 {
			ckExporters++
		}
		for _, ls := range ss[FlowLeader] {
			if hasLabel(ls, "source", testkit.West) {
				t.Errorf("%s exports %s{%s} for the disabled pair", pr.name, FlowLeader, ls)
			}
		}
		st := pr.o.Status()
		for _, fs := range st.Flows {
			if fs.Source == testkit.East && fs.Leader {
				leaders++
			}
			if fs.Source == testkit.West && (fs.Enabled || fs.Up || fs.Leader || len(fs.Partitions) > 0) {
				t.Errorf("%s /status shows the disabled pair as %+v, want enabled false, up false, leader false", pr.name, fs)
			}
		}
	}
	if leaders != 1 || ckExporters != 1 {
		t.Errorf("%v processes lead the flow and %d export checkpoint series, want 1 and 1", leaders, ckExporters)
	}
	testkit.WaitFor(t, "one process to emit the disabled pair's heartbeats", func() bool {
		n := 0
		for _, pr := range []*process{a, b} {
			for _, fs := range pr.m.Status() {
				if fs.Flow == back.Name() && fs.Heartbeats {
					n++
				}
			}
		}
		return n == 1
	})

	a.stop()
	testkit.WaitFor(t, "b copies every partition", func() bool { return b.tasks(flow) == len(want) })
	testkit.WaitFor(t, "b exports every partition once", func() bool {
		why = coverage(t, want, b)
		return why == ""
	})
	for _, name := range perPartition {
		if n := len(a.series(t)[name]); n != 0 {
			t.Errorf("stopped process a still exports %d %s series", n, name)
		}
	}
}

// A process that stops leading drops the flow's checkpoint series: the new
// leader exports them, and the former leader's checkpoint age would grow
// into a false MirrorCheckpointsStale alert.
func TestLeaderChangeDropsCheckpointSeries(t *testing.T) {
	now := time.Unix(1000, 0)
	o := New(func() time.Time { return now })
	o.FlowState("a", "b", true)
	o.FlowState("c", "b", true)
	o.Leader("a", "b", true)
	o.Leader("c", "b", true)
	o.CheckpointWritten("a", "b", "g", "a.t", 0, 20*time.Millisecond)
	o.CheckpointWritten("c", "b", "g", "c.t", 0, 20*time.Millisecond)
	pr := &process{name: "leader", o: o, reg: prometheus.NewRegistry()}
	pr.reg.MustRegister(o)
	count := func(src string) (ck, age int) {
		ss := pr.series(t)
		for _, ls := range ss[CheckpointLatency] {
			if hasLabel(ls, "source", src) {
				ck++
			}
		}
		for _, ls := range ss[CheckpointAgeSeconds] {
			if hasLabel(ls, "source", src) {
				age++
			}
		}
		return ck, age
	}
	if ck, age := count("a"); ck != 1 || age != 1 {
		t.Fatalf("leading a->b: %d checkpoint latency and %d age series, want 1 and 1", ck, age)
	}
	o.Leader("a", "b", false)
	if ck, age := count("a"); ck != 0 || age != 0 {
		t.Errorf("after a->b's leadership ended: %d checkpoint latency and %d age series, want none", ck, age)
	}
	if ck, age := count("c"); ck != 1 || age != 1 {
		t.Errorf("c->b, still led: %d checkpoint latency and %d age series, want 1 and 1", ck, age)
	}
}
