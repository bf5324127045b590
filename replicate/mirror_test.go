package replicate

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/mirrorctl/mirrorctl/internal/testkit"
	"github.com/mirrorctl/mirrorctl/replicate/filter"
	"github.com/mirrorctl/mirrorctl/replicate/mm2"
)

// sampleRecords returns n records per partition with every shape the copy must
// keep: headers (a duplicate key, a nil value), null keys, tombstones and
// explicit timestamps.
func sampleRecords(topic string, partitions int32, n int) []*kgo.Record {
	return sampleRange(topic, partitions, 0, n)
}

// sampleRange returns records from..to-1 of each partition's sample sequence.
func sampleRange(topic string, partitions int32, from, to int) []*kgo.Record {
	base := time.UnixMilli(1_700_000_000_000)
	var out []*kgo.Record
	for p := int32(0); p < partitions; p++ {
		for i := from; i < to; i++ {
			r := &kgo.Record{
				Topic:     topic,
				Partition: p,
				Key:       []byte(fmt.Sprintf("k-%d-%d", p, i%7)),
				Value:     []byte(fmt.Sprintf("value %d of partition %d", i, p)),
				Timestamp: base.Add(time.Duration(i) * time.Second),
			}
			switch i % 5 {
			case 1:
				r.Key = nil // null key
			case 2:
				r.Value = nil // tombstone
			case 3:
				r.Headers = []kgo.RecordHeader{
					{Key: "trace", Value: []byte("abc")},
					{Key: "trace", Value: []byte("def")}, // duplicate key, order kept
					{Key: "empty", Value: nil},
				}
			}
			out = append(out, r)
		}
	}
	return out
}

func headersEqual(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) || (a[i].Value == nil) != (b[i].Value == nil) {
			return false
		}
	}
	return true
}

// assertCopied checks that the remote topic holds the source's records, byte
// for byte, partition for partition, in order.
func assertCopied(t *testing.T, p *clusterPair, srcAlias, topic, dstAlias, remote string) int {
	t.Helper()
	src := p.ReadAll(t, srcAlias, topic)
	dst := p.ReadAll(t, dstAlias, remote)
	if len(dst) != len(src) {
		t.Fatalf("%s has %d partitions, %s has %d", remote, len(dst), topic, len(src))
	}
	total := 0
	for part, srecs := range src {
		drecs := dst[part]
		if len(drecs) != len(srecs) {
			t.Fatalf("%s[%d]: %d records, source %s[%d] has %d", remote, part, len(drecs), topic, part, len(srecs))
		}
		for i, s := range srecs {
			d := drecs[i]
			if !bytes.Equal(s.Key, d.Key) || (s.Key == nil) != (d.Key == nil) {
				t.Errorf("%s[%d] #%d: key %q, want %q", remote, part, i, d.Key, s.Key)
			}
			if !bytes.Equal(s.Value, d.Value) || (s.Value == nil) != (d.Value == nil) {
				t.Errorf("%s[%d] #%d: value %q (nil %v), want %q (nil %v)", remote, part, i, d.Value, d.Value == nil, s.Value, s.Value == nil)
			}
			if !s.Timestamp.Equal(d.Timestamp) {
				t.Errorf("%s[%d] #%d: timestamp %v, want %v", remote, part, i, d.Timestamp, s.Timestamp)
			}
			if !headersEqual(s.Headers, d.Headers) {
				t.Errorf("%s[%d] #%d: headers %v, want %v", remote, part, i, d.Headers, s.Headers)
			}
		}
		total += len(srecs)
	}
	return total
}

func readSyncs(t *testing.T, p *clusterPair, alias, topic string) []mm2.OffsetSync {
	t.Helper()
	var out []mm2.OffsetSync
	for _, r := range p.ReadAll(t, alias, topic)[0] {
		s, err := mm2.DecodeOffsetSync(r.Key, r.Value)
		if err != nil {
			t.Fatalf("offset sync at %d: %v", r.Offset, err)
		}
		out = append(out, s)
	}
	return out
}

func TestOnceCopiesBytesExactly(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("orders")
	p.CreateTopic(t, "us-east", topic, 3, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 3, 40)...)

	f := testFlow("us-east", "eu-west")
	f.OffsetLagMax = 0 // a sync for every record
	m := runOnce(t, p, f)

	remote := "us-east." + topic
	if n := assertCopied(t, p, "us-east", topic, "eu-west", remote); n != 120 {
		t.Fatalf("copied %d records, want 120", n)
	}
	var acked int64
	for _, s := range m.Stats() {
		if s.Topic == topic {
			acked += s.Records
			if s.Acked != 40 || s.Error != "" {
				t.Errorf("stats %+v: want acked 40 and no error", s)
			}
		}
	}
	if acked != 120 {
		t.Fatalf("stats count %d records, want 120", acked)
	}

	// offset.lag.max=0: one offset sync per record, in MM2's format, on the
	// source cluster, upstream offset == downstream offset here.
	syncs := readSyncs(t, p, "us-east", "mm2-offset-syncs.eu-west.internal")
	per := map[int32][]mm2.OffsetSync{}
	for _, s := range syncs {
		if s.Topic != topic {
			t.Fatalf("offset sync names topic %q, want the upstream name %q", s.Topic, topic)
		}
		per[s.Partition] = append(per[s.Partition], s)
	}
	for part := int32(0); part < 3; part++ {
		if len(per[part]) != 40 {
			t.Fatalf("partition %d: %d offset syncs, want 40", part, len(per[part]))
		}
		for i, s := range per[part] {
			if s.UpstreamOffset != int64(i) || s.DownstreamOffset != int64(i) {
				t.Fatalf("partition %d sync %d = %v, want %d->%d", part, i, s, i, i)
			}
		}
	}

	// One heartbeat from the once run, in MM2's format.
	hbs := p.ReadAll(t, "eu-west", "heartbeats")[0]
	if len(hbs) != 1 {
		t.Fatalf("%d heartbeats, want 1", len(hbs))
	}
	hb, err := mm2.DecodeHeartbeat(hbs[0].Key, hbs[0].Value)
	if err != nil || hb.SourceAlias != "us-east" || hb.TargetAlias != "eu-west" || hbs[0].Timestamp.UnixMilli() != hb.Timestamp {
		t.Fatalf("heartbeat %+v (record ts %d), err %v", hb, hbs[0].Timestamp.UnixMilli(), err)
	}
}

func TestOffsetSyncsDefaultSpacing(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("spaced")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 350)...)
	f := testFlow("us-east", "eu-west")
	f.OffsetSyncsTopicLocation = LocationTarget
	runOnce(t, p, f)

	// At the target location, named after the source alias.
	var ups []int64
	for _, s := range readSyncs(t, p, "eu-west", "mm2-offset-syncs.us-east.internal") {
		ups = append(ups, s.UpstreamOffset)
	}
	want := []int64{0, 101, 202, 303, 349} // immediate syncs, then the delayed last one on flush
	if fmt.Sprint(ups) != fmt.Sprint(want) {
		t.Fatalf("offset syncs at %v, want %v", ups, want)
	}
}

func TestOffsetSyncAtTransactionMarkers(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("txn")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	cl, err := p.Clients.Client("us-east", "producer", kgo.TransactionalID(testkit.Name("tx")), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	for txn := 0; txn < 3; txn++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 4; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("t%d-%d", txn, i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	// Source offsets: 0-3, marker 4, 5-8, marker 9, 10-13, marker 14.
	runOnce(t, p, testFlow("us-east", "eu-west"))
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 12 {
		t.Fatalf("copied %d, want 12", n)
	}
	var got []string
	for _, s := range readSyncs(t, p, "us-east", "mm2-offset-syncs.eu-west.internal") {
		got = append(got, fmt.Sprintf("%d->%d", s.UpstreamOffset, s.DownstreamOffset))
	}
	// First record, then each record after a marker (upstream gap), then the
	// delayed last record.
	want := "[0->0 5->4 10->8 13->11]"
	if fmt.Sprint(got) != want {
		t.Fatalf("offset syncs %v, want %s", got, want)
	}
}

func TestRestartResumesWithoutLossOrDuplicates(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("resume")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 2, 30)...)
	f := testFlow("us-east", "eu-west")
	runOnce(t, p, f)
	p.Produce(t, "us-east", sampleRange(topic, 2, 30, 45)...)
	runOnce(t, p, f)
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 90 {
		t.Fatalf("copied %d, want 90 (each record exactly once)", n)
	}
}

func TestStopMidStreamThenResume(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("midstream")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	f := testFlow("us-east", "eu-west")
	m, stop := runBackground(t, p, f)
	testkit.WaitFor(t, "flow start", func() bool { return len(m.Stats()) == 2 })
	p.Produce(t, "us-east", sampleRecords(topic, 2, 200)...)
	testkit.WaitFor(t, "some records copied", func() bool {
		var n int64
		for _, s := range m.Stats() {
			n += s.Records
		}
		return n > 0
	})
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	runOnce(t, p, f)
	// Graceful stop writes final progress, so nothing is copied twice.
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 400 {
		t.Fatalf("copied %d, want 400", n)
	}
}

// A crash (no final progress write) re-copies at most what was acknowledged
// after the last progress write, and loses nothing.
func TestCrashResumeIsAtLeastOnce(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("crash")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 100)...)
	f := testFlow("us-east", "eu-west")
	runOnce(t, p, f)
	// Simulate a crash after copying 20 more records whose progress was never
	// written: produce them to the remote topic directly.
	p.Produce(t, "us-east", sampleRange(topic, 1, 100, 120)...)
	src := p.ReadAll(t, "us-east", topic)[0]
	var dup []*kgo.Record
	for _, r := range src[100:] {
		dup = append(dup, &kgo.Record{Topic: "us-east." + topic, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
	}
	p.Produce(t, "eu-west", dup...)
	runOnce(t, p, f)
	dst := p.ReadAll(t, "eu-west", "us-east."+topic)[0]
	if len(dst) != 140 {
		t.Fatalf("remote has %d records, want 140 (100 + 20 crashed + 20 re-copied)", len(dst))
	}
	for i, r := range dst[120:] {
		if !bytes.Equal(r.Value, src[100+i].Value) {
			t.Fatalf("re-copied record %d = %q, want %q", i, r.Value, src[100+i].Value)
		}
	}
}

func TestPartitionGrowthAndNewTopics(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("grow")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	f := testFlow("us-east", "eu-west")
	f.RefreshTopicsInterval = 100 * time.Millisecond
	m, stop := runBackground(t, p, f)
	testkit.WaitFor(t, "flow start", func() bool { return len(m.Stats()) == 1 })
	if _, err := p.Admin(t, "us-east").UpdatePartitions(testkit.Context(t), 3, topic); err != nil {
		t.Fatal(err)
	}
	later := testkit.Name("later")
	p.CreateTopic(t, "us-east", later, 2, nil)
	testkit.WaitFor(t, "new partitions and topic picked up", func() bool { return len(m.Stats()) == 5 })
	p.Produce(t, "us-east", sampleRecords(topic, 3, 10)...)
	p.Produce(t, "us-east", sampleRecords(later, 2, 10)...)
	testkit.WaitFor(t, "records copied", func() bool {
		var n int64
		for _, s := range m.Stats() {
			n += s.Records
		}
		return n == 50
	})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic)
	assertCopied(t, p, "us-east", later, "eu-west", "us-east."+later)
}

func TestTopicConfigsCopiedAndSynced(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("configs")
	p.CreateTopic(t, "us-east", topic, 1, map[string]*string{
		"retention.ms":        ptr("12345678"),
		"min.insync.replicas": ptr("1"), // excluded by default
	})
	f := testFlow("us-east", "eu-west")
	f.SyncTopicConfigsInterval = 100 * time.Millisecond
	runOnce(t, p, f)
	cfgs := func() map[string]string {
		rc, err := p.Admin(t, "eu-west").DescribeTopicConfigs(testkit.Context(t), "us-east."+topic)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range rc[0].Configs {
			if c.Source == 1 { // DYNAMIC_TOPIC_CONFIG: set on the topic
				out[c.Key] = c.MaybeValue()
			}
		}
		return out
	}
	got := cfgs()
	if got["retention.ms"] != "12345678" {
		t.Fatalf("retention.ms on the remote topic = %q, want 12345678 (configs %v)", got["retention.ms"], got)
	}
	if _, ok := got["min.insync.replicas"]; ok {
		t.Fatalf("min.insync.replicas was copied though config.properties.exclude lists it")
	}
	// Periodic sync: a change on the source reaches the target.
	if _, err := p.Admin(t, "us-east").AlterTopicConfigs(testkit.Context(t), []kadm.AlterConfig{{Name: "retention.ms", Value: ptr("999999")}}, topic); err != nil {
		t.Fatal(err)
	}
	_, stop := runBackground(t, p, f)
	testkit.WaitFor(t, "config sync", func() bool { return cfgs()["retention.ms"] == "999999" })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestActiveActiveNoCycles(t *testing.T) {
	p := newClusterPair(t)
	east, west := testkit.Name("east-orders"), testkit.Name("west-orders")
	p.CreateTopic(t, "us-east", east, 2, nil)
	p.CreateTopic(t, "eu-west", west, 2, nil)
	p.Produce(t, "us-east", sampleRecords(east, 2, 25)...)
	p.Produce(t, "eu-west", sampleRecords(west, 2, 25)...)
	ew, we := testFlow("us-east", "eu-west"), testFlow("eu-west", "us-east")
	ew.RefreshTopicsInterval, we.RefreshTopicsInterval = 50*time.Millisecond, 50*time.Millisecond
	m, stop := runBackground(t, p, ew, we)
	testkit.WaitFor(t, "both directions copied", func() bool {
		var n int64
		for _, s := range m.Stats() {
			if !strings.Contains(s.Topic, "heartbeats") {
				n += s.Records
			}
		}
		return n == 100
	})
	time.Sleep(300 * time.Millisecond) // several refresh rounds: nothing new may appear
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, alias := range []string{"us-east", "eu-west"} {
		topics, err := p.Admin(t, alias).ListTopics(testkit.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range topics.Names() {
			if strings.HasPrefix(n, "us-east.eu-west.") || strings.HasPrefix(n, "eu-west.us-east.") {
				t.Fatalf("cycle: %s exists on %s", n, alias)
			}
		}
	}
	assertCopied(t, p, "us-east", east, "eu-west", "us-east."+east)
	assertCopied(t, p, "eu-west", west, "us-east", "eu-west."+west)
	// Heartbeats flowed too: each side's heartbeats topic is mirrored once.
	for _, s := range m.Stats() {
		if s.Topic == "eu-west.heartbeats" || s.Topic == "us-east.heartbeats" {
			t.Fatalf("remote heartbeats %s were mirrored back", s.Topic)
		}
	}
}

func TestPlanReasons(t *testing.T) {
	p := newClusterPair(t)
	for _, tn := range []string{"orders", "eu-west.orders", "app-internal", "mm2-offsets.x.internal", "legacy.replica", "skipme", "heartbeats"} {
		p.CreateTopic(t, "us-east", tn, 1, nil)
	}
	p.CreateTopic(t, "eu-west", "us-east.orders", 1, nil)
	f := testFlow("us-east", "eu-west")
	exc, err := filter.CompileList("topics.exclude", filter.DefaultTopicsExclude+", skipme")
	if err != nil {
		t.Fatal(err)
	}
	f.Topics.Exclude = exc
	plan, err := PlanFlow(testkit.Context(t), f, p.Admin(t, "us-east"), p.Admin(t, "eu-west"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TopicPlan{}
	for _, tp := range plan.Topics {
		got[tp.Topic] = tp
	}
	want := map[string]string{
		"orders":                 ActionInSync,
		"heartbeats":             ActionCreate,
		"eu-west.orders":         ActionSkip,
		"app-internal":           ActionCreate, // a user topic since KAFKA-17200
		"mm2-offsets.x.internal": ActionSkip,
		"legacy.replica":         ActionSkip,
		"skipme":                 ActionSkip,
	}
	for tn, action := range want {
		g, ok := got[tn]
		if !ok {
			t.Fatalf("plan leaves out %s: %+v", tn, plan.Topics)
		}
		if g.Action != action {
			t.Errorf("%s: action %s, want %s (reason %q)", tn, g.Action, action, g.Reason)
		}
		if action == ActionSkip && g.Reason == "" {
			t.Errorf("%s is skipped without a reason", tn)
		}
	}
	if !strings.Contains(got["eu-west.orders"].Reason, "cycle") {
		t.Errorf("eu-west.orders reason %q, want a cycle", got["eu-west.orders"].Reason)
	}
	if g := got["orders"]; g.RemoteTopic != "us-east.orders" {
		t.Errorf("orders remote topic %q", g.RemoteTopic)
	}
	var internal []string
	for _, it := range plan.Internal {
		internal = append(internal, fmt.Sprintf("%s:%s:%s:%v", it.Purpose, it.Cluster, it.Topic, it.Exists))
	}
	want2 := "[progress:eu-west:mirrorctl-progress.us-east.internal:false offset-syncs:us-east:mm2-offset-syncs.eu-west.internal:false " +
		"checkpoints:eu-west:us-east.checkpoints.internal:false heartbeats:eu-west:heartbeats:false " +
		"acl-ledger:eu-west:mirrorctl-acls.us-east.internal:false]"
	if fmt.Sprint(internal) != want2 {
		t.Errorf("internal topics %v, want %s", internal, want2)
	}
}

func TestRefusedRecordStopsOnlyItsPartition(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("big")
	p.CreateTopic(t, "us-east", topic, 2, nil)
	// The remote topic exists with a small max.message.bytes.
	p.CreateTopic(t, "eu-west", "us-east."+topic, 2, map[string]*string{"max.message.bytes": ptr("2000")})
	recs := sampleRecords(topic, 2, 10)
	noise := make([]byte, 5000) // incompressible, so the producer's compression cannot shrink it
	for i := range noise {
		noise[i] = byte(rand.Uint32())
	}
	big := &kgo.Record{Topic: topic, Partition: 1, Value: noise}
	recs = append(recs, big)
	recs = append(recs, sampleRange(topic, 2, 10, 13)[3:]...) // partition 1 goes on after the big one
	p.Produce(t, "us-east", recs...)
	f := testFlow("us-east", "eu-west")
	f.SyncTopicConfigs = false // keep the target's small limit
	m, err := New(Options{Flows: []FlowConfig{f}, Clients: p.Clients, Once: true})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Run(testkit.Context(t))
	var rerr *RecordError
	if !errors.As(err, &rerr) {
		t.Fatalf("Run = %v, want a *RecordError", err)
	}
	if rerr.Topic != topic || rerr.Partition != 1 || rerr.Offset != 10 || rerr.Size != 5000 {
		t.Fatalf("RecordError %+v: want %s[1] offset 10 size 5000", rerr, topic)
	}
	if !errors.Is(err, kerr.MessageTooLarge) && !strings.Contains(err.Error(), "too large") {
		t.Fatalf("error %v does not say the record is too large", err)
	}
	for _, s := range m.Stats() {
		switch s.Partition {
		case 0:
			if s.Acked != 10 || s.Error != "" {
				t.Errorf("partition 0: %+v, want all 10 copied", s)
			}
		case 1:
			if s.Acked != 10 || s.Error == "" {
				t.Errorf("partition 1: %+v, want stopped at offset 10", s)
			}
		}
	}
}

func TestHeartbeatsOffMeansNone(t *testing.T) {
	p := newClusterPair(t)
	topic := testkit.Name("quiet")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 5)...)
	f := testFlow("us-east", "eu-west")
	f.EmitHeartbeats = false
	back := testFlow("eu-west", "us-east")
	back.Enabled, back.EmitHeartbeats = false, false
	runOnce(t, p, f, back)
	for _, alias := range []string{"us-east", "eu-west"} {
		topics, err := p.Admin(t, alias).ListTopics(testkit.Context(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range topics.Names() {
			if strings.Contains(n, "heartbeats") {
				t.Fatalf("%s exists on %s with heartbeats off", n, alias)
			}
		}
	}
	// With heartbeats on for the disabled reverse pair only, MM2's reverse
	// herder writes (eu-west, us-east) heartbeats on us-east, and the flow
	// mirrors them to eu-west as us-east.heartbeats, past the topic filter.
	back.EmitHeartbeats = true
	f.Topics.Include = mustList(t, "topics", topic)
	runOnce(t, p, back)
	runOnce(t, p, f)
	hbs := p.ReadAll(t, "eu-west", "us-east.heartbeats")[0]
	if len(hbs) != 1 {
		t.Fatalf("us-east.heartbeats on eu-west has %d records, want 1", len(hbs))
	}
	hb, err := mm2.DecodeHeartbeat(hbs[0].Key, hbs[0].Value)
	if err != nil || hb.SourceAlias != "eu-west" || hb.TargetAlias != "us-east" {
		t.Fatalf("mirrored heartbeat %+v, %v", hb, err)
	}
}

func mustList(t *testing.T, key, value string) *filter.Pattern {
	t.Helper()
	p, err := filter.CompileList(key, value)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A delivery.timeout.ms on the target's producer must not fail copies of old
// records: kgo dates a record from its timestamp, and copies keep the
// source's (here from 2023).
func TestOldRecordsSurviveADeliveryTimeout(t *testing.T) {
	p := newClusterPair(t)
	p.Clients.Extra["eu-west/producer"] = []kgo.Opt{kgo.RecordDeliveryTimeout(time.Second)}
	topic := testkit.Name("old")
	p.CreateTopic(t, "us-east", topic, 1, nil)
	p.Produce(t, "us-east", sampleRecords(topic, 1, 30)...)
	runOnce(t, p, testFlow("us-east", "eu-west"))
	if n := assertCopied(t, p, "us-east", topic, "eu-west", "us-east."+topic); n != 30 {
		t.Fatalf("copied %d, want 30", n)
	}
}
