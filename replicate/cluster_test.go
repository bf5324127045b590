package replicate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// testClients implements Clients over in-process kfake clusters.
type testClients struct {
	t      testing.TB
	addrs  map[string][]string
	mu     sync.Mutex
	admins map[string]*kadm.Client
	extra  map[string][]kgo.Opt // per alias+role extra options, e.g. "eu-west/producer"
}

func (c *testClients) Client(alias, role string, extra ...kgo.Opt) (*kgo.Client, error) {
	addrs, ok := c.addrs[alias]
	if !ok {
		return nil, fmt.Errorf("unknown alias %q", alias)
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(addrs...)}, c.extra[alias+"/"+role]...)
	return kgo.NewClient(append(opts, extra...)...)
}

func (c *testClients) Admin(alias string) (*kadm.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.admins[alias]; ok {
		return a, nil
	}
	cl, err := c.Client(alias, "admin")
	if err != nil {
		return nil, err
	}
	a := kadm.NewClient(cl)
	c.admins[alias] = a
	c.t.Cleanup(cl.Close)
	return a, nil
}

// clusterPair is two in-process clusters, us-east and eu-west.
type clusterPair struct {
	east, west *kfake.Cluster
	clients    *testClients
}

func newClusterPair(t testing.TB) *clusterPair {
	t.Helper()
	east, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(east.Close)
	west, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(west.Close)
	return &clusterPair{east: east, west: west, clients: &testClients{
		t:      t,
		addrs:  map[string][]string{"us-east": east.ListenAddrs(), "eu-west": west.ListenAddrs()},
		admins: make(map[string]*kadm.Client),
		extra:  make(map[string][]kgo.Opt),
	}}
}

func (p *clusterPair) admin(t testing.TB, alias string) *kadm.Client {
	t.Helper()
	a, err := p.clients.Admin(alias)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (p *clusterPair) createTopic(t testing.TB, alias, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := p.admin(t, alias).CreateTopic(testCtx(t), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, alias, err)
	}
}

func (p *clusterPair) produce(t testing.TB, alias string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := p.clients.Client(alias, "producer", kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(testCtx(t), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", alias, err)
	}
}

// readAll reads every record of topic on alias from the log start to the end
// offsets at call time, per partition, control records excluded.
func (p *clusterPair) readAll(t testing.TB, alias, topic string) map[int32][]*kgo.Record {
	t.Helper()
	ctx := testCtx(t)
	adm := p.admin(t, alias)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int32][]*kgo.Record)
	want := make(map[int32]int64)
	assign := make(map[int32]kgo.Offset)
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset %s[%d]: %v", o.Topic, o.Partition, o.Err)
		}
		s, _ := starts.Lookup(o.Topic, o.Partition)
		out[o.Partition] = nil
		if o.Offset > s.Offset {
			want[o.Partition] = o.Offset
			assign[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(want) == 0 {
		return out
	}
	cl, err := p.clients.Client(alias, "consumer",
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s on %s: timed out with partitions %v unfinished", topic, alias, want)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if !r.Attrs.IsControl() {
				out[r.Partition] = append(out[r.Partition], r)
			}
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond every 20ms until it holds or 20s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var uniq atomic.Int64

// name returns a topic or group name unique to this test process.
func name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, uniq.Add(1)) }

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
	m, err := New(Options{Flows: flows, Clients: p.clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(testCtx(t)); err != nil {
		t.Fatalf("run once: %v", err)
	}
	return m
}

// runBackground starts a continuous mirror and returns a stop func that
// cancels it and returns Run's error.
func runBackground(t testing.TB, p *clusterPair, flows ...FlowConfig) (*Mirror, func() error) {
	t.Helper()
	m, err := New(Options{Flows: flows, Clients: p.clients})
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
