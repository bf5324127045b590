package replicate

import (
	"sync"
	"testing"
	"time"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
)

type recObserver struct {
	mu          sync.Mutex
	acked       map[string]int
	ackedBytes  map[string]int
	next        map[string]int64
	hwm         map[string]int64
	checkpoints int
	states      []bool
	rebalanced  int
	leader      []bool
}

type recPart struct {
	o   *recObserver
	key string
}

func (o *recObserver) Partition(source, target, topic string, p int32) PartitionObserver {
	return recPart{o, source + ">" + target + "/" + topic + "/" + string(rune('0'+p))}
}
func (o *recObserver) CheckpointWritten(_, _, _, _ string, _ int32, latency time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if latency >= 0 {
		o.checkpoints++
	}
}
func (o *recObserver) Rebalance(_, _ string, assigned, revoked, lost int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rebalanced += assigned + revoked + lost
}
func (o *recObserver) Leader(_, _ string, leading bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.leader = append(o.leader, leading)
}
func (o *recObserver) FlowState(_, _ string, up bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.states = append(o.states, up)
}
func (p recPart) Fetched(h int64) {
	p.o.mu.Lock()
	defer p.o.mu.Unlock()
	p.o.hwm[p.key] = h
}
func (p recPart) Polled(int, time.Duration) {}
func (p recPart) Acked(n int, _ time.Duration, next int64) {
	p.o.mu.Lock()
	defer p.o.mu.Unlock()
	p.o.acked[p.key]++
	p.o.ackedBytes[p.key] += n
	p.o.next[p.key] = next
}

func TestObserverSeesEveryCopy(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("observed")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	recs := sampleRecords(topic, 2, 50)
	p.Produce(t, "us-east", recs...)
	g := testkit.Name("g-obs")
	p.Commit(t, "us-east", g, map[string]map[int32]int64{topic: {0: 50}})
	obs := &recObserver{acked: map[string]int{}, ackedBytes: map[string]int{}, next: map[string]int64{}, hwm: map[string]int64{}}
	m, err := New(Options{Flows: []FlowConfig{testFlow("us-east", "eu-west")}, Clients: p.Clients, Once: true, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(testkit.Context(t)); err != nil {
		t.Fatal(err)
	}
	wantBytes := map[int32]int{}
	for _, r := range recs {
		wantBytes[r.Partition] += len(r.Value)
	}
	for part := int32(0); part < 2; part++ {
		key := "us-east>eu-west/us-east." + topic + "/" + string(rune('0'+part))
		if obs.acked[key] != 50 || obs.next[key] != 50 || obs.hwm[key] != 50 || obs.ackedBytes[key] != wantBytes[part] {
			t.Errorf("%s: acked %d, next %d, hwm %d, bytes %d; want 50, 50, 50, %d", key, obs.acked[key], obs.next[key], obs.hwm[key], obs.ackedBytes[key], wantBytes[part])
		}
	}
	if obs.checkpoints != 1 || len(obs.states) != 2 || !obs.states[0] || obs.states[1] {
		t.Errorf("checkpoints %d, flow states %v; want 1 and [true false]", obs.checkpoints, obs.states)
	}
}
