package failover

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

	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// testClients implements replicate.Clients over in-process kfake clusters
// (the pattern of replicate/cluster_test.go).
type testClients struct {
	t      testing.TB
	addrs  map[string][]string
	mu     sync.Mutex
	admins map[string]*kadm.Client
}

func (c *testClients) Client(alias, role string, extra ...kgo.Opt) (*kgo.Client, error) {
	addrs, ok := c.addrs[alias]
	if !ok {
		return nil, fmt.Errorf("unknown alias %q", alias)
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(3 * time.Second)}, extra...)...)
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

type pair struct {
	east, west *kfake.Cluster
	clients    *testClients
}

func newPair(t testing.TB) *pair {
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
	return &pair{east: east, west: west, clients: &testClients{t: t,
		addrs:  map[string][]string{"us-east": east.ListenAddrs(), "eu-west": west.ListenAddrs()},
		admins: map[string]*kadm.Client{}}}
}

func (p *pair) admin(t testing.TB, alias string) *kadm.Client {
	t.Helper()
	a, err := p.clients.Admin(alias)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (p *pair) createTopic(t testing.TB, alias, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := p.admin(t, alias).CreateTopic(testCtx(t), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s on %s: %v", topic, alias, err)
	}
}

func (p *pair) produce(t testing.TB, alias string, recs ...*kgo.Record) {
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

// commit commits offsets ("topic" -> partition -> offset) for group.
func (p *pair) commit(t testing.TB, alias, group string, offsets map[string]map[int32]int64) {
	t.Helper()
	os := kadm.Offsets{}
	for topic, parts := range offsets {
		for part, at := range parts {
			os.Add(kadm.Offset{Topic: topic, Partition: part, At: at, LeaderEpoch: -1, Metadata: "m-" + group})
		}
	}
	resp, err := p.admin(t, alias).CommitOffsets(testCtx(t), group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s on %s: %v", group, alias, err)
	}
}

// readAll returns every record (control records included) of topic[partition]
// on alias from the log start to the end.
func (p *pair) readAll(t testing.TB, alias, topic string, partition int32) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	ctx := testCtx(t)
	starts, ends, err := listOffsets(ctx, p.admin(t, alias), alias, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := starts.Lookup(topic, partition)
	e, _ := ends.Lookup(topic, partition)
	err = scan(ctx, p.clients, alias, []*scanJob{{topic: topic, partition: partition, from: s.Offset, end: e.Offset,
		visit: func(r *kgo.Record) bool { out = append(out, r); return true }}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (p *pair) writeSyncs(t testing.TB, syncs ...mm2.OffsetSync) {
	t.Helper()
	var recs []*kgo.Record
	for _, s := range syncs {
		k, _ := s.MarshalKey()
		v, _ := s.MarshalValue()
		recs = append(recs, &kgo.Record{Topic: "mm2-offset-syncs.eu-west.internal", Key: k, Value: v})
	}
	p.produce(t, "us-east", recs...)
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var uniq atomic.Int64

func name(prefix string) string { return fmt.Sprintf("%s-%d", prefix, uniq.Add(1)) }

// testFlow is us-east->eu-west for one-broker clusters, mirroring only topic.
func testFlow(t testing.TB, topics ...string) replicate.FlowConfig {
	f := replicate.DefaultFlowConfig("us-east", "eu-west")
	f.ReplicationFactor = 1
	f.OffsetSyncsReplicationFactor = 1
	f.HeartbeatsReplicationFactor = 1
	f.ProgressReplicationFactor = 1
	f.CheckpointsReplicationFactor = 1
	f.ProgressInterval = 50 * time.Millisecond
	f.EmitHeartbeats = false
	f.OffsetFlushInterval = 100 * time.Millisecond
	if len(topics) > 0 {
		re := ""
		for i, tp := range topics {
			if i > 0 {
				re += ","
			}
			re += tp
		}
		inc, err := filter.CompileList("topics", re)
		if err != nil {
			t.Fatal(err)
		}
		f.Topics.Include = inc
	}
	return f
}

func (p *pair) mirrorOnce(t testing.TB, f replicate.FlowConfig) {
	t.Helper()
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(testCtx(t)); err != nil {
		t.Fatalf("mirror once: %v", err)
	}
}

func (p *pair) engine(t testing.TB, f replicate.FlowConfig) *Engine {
	t.Helper()
	e, err := New(Options{Flow: f, Clients: p.clients, SourceTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// records returns n distinct records for topic[partition] numbered from..,
// with keys, headers and timestamps; every 5th has a nil key, every 7th a
// nil value, every 3rd two headers.
func records(topic string, partition int32, from, n int) []*kgo.Record {
	var out []*kgo.Record
	for i := from; i < from+n; i++ {
		r := &kgo.Record{Topic: topic, Partition: partition, Key: []byte(fmt.Sprintf("k%d", i%10)),
			Value: []byte(fmt.Sprintf("v%d", i)), Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		if i%5 == 0 {
			r.Key = nil
		}
		if i%7 == 6 {
			r.Value = nil
		}
		if i%3 == 0 {
			r.Headers = []kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "n", Value: nil}}
		}
		out = append(out, r)
	}
	return out
}

// base is recent, so kfake's retention (applied with Compact) keeps records.
var base = time.Now().Add(-time.Hour).Truncate(time.Second)

// copyOf returns a record with r's content for topic[partition].
func copyOf(r *kgo.Record, topic string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
}

// oracle is the true target position of a group at source offset u: the
// offset of the first copy of the first source data record at or after u,
// or, when there is none, one past the first copy of the last source data
// record. ok=false when the copy is missing.
func oracle(src, tgt []*kgo.Record, u int64) (int64, bool) {
	var want *kgo.Record
	atEnd := false
	for _, r := range src {
		if r.Attrs.IsControl() {
			continue
		}
		if r.Offset >= u {
			want = r
			break
		}
		want, atEnd = r, true
	}
	if want != nil && want.Offset >= u {
		atEnd = false
	}
	if want == nil {
		return 0, false
	}
	c := ContentOf(want)
	for _, r := range tgt {
		if !r.Attrs.IsControl() && ContentOf(r).Matches(c) {
			if atEnd {
				return r.Offset + 1, true
			}
			return r.Offset, true
		}
	}
	return 0, false
}

func rowOf(t testing.TB, res *TranslateResult, group, topic string, partition int32) Translation {
	t.Helper()
	for _, g := range res.Groups {
		if g.Group != group {
			continue
		}
		for _, r := range g.Partitions {
			if r.Topic == topic && r.Partition == partition {
				return r
			}
		}
	}
	t.Fatalf("no row for %s %s[%d] in %+v", group, topic, partition, res.Groups)
	return Translation{}
}

func i64(p *int64) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
