package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// pair is the shared kfake pair (us-east, eu-west) with this package's own
// helpers added; its clients give up retrying after 3 s, so tests that stop
// a cluster fail fast.
type pair struct{ *testkit.Pair }

func newPair(t testing.TB) *pair {
	p := &pair{testkit.NewPair(t)}
	p.Clients.Opts = []kgo.Opt{kgo.RetryTimeout(3 * time.Second)}
	return p
}

func (p *pair) writeSyncs(t testing.TB, syncs ...mm2.OffsetSync) {
	t.Helper()
	var recs []*kgo.Record
	for _, s := range syncs {
		k, _ := s.MarshalKey()
		v, _ := s.MarshalValue()
		recs = append(recs, &kgo.Record{Topic: "mm2-offset-syncs.eu-west.internal", Key: k, Value: v})
	}
	p.Produce(t, "us-east", recs...)
}

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
	m, err := replicate.New(replicate.Options{Flows: []replicate.FlowConfig{f}, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(testkit.Context(t)); err != nil {
		t.Fatalf("mirror once: %v", err)
	}
}

func (p *pair) engine(t testing.TB, f replicate.FlowConfig) *Engine {
	t.Helper()
	e, err := New(Options{Flow: f, Clients: p.Clients, SourceTimeout: 2 * time.Second})
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
